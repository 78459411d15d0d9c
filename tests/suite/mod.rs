mod cache;
mod cli;
mod dropin;
mod escapes;
mod fs_tools;
mod fs_tools_tree;
mod hostile;
