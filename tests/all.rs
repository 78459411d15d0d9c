//! The one integration test binary: see `suite/` for the areas.

mod suite;
