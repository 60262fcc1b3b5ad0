//! cosched-store
