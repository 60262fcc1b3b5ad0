//! cosched-measure
