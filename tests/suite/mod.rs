mod cache;
mod cli;
mod dropin;
mod escapes;
mod hostile;
