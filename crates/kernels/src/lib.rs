//! cosched-kernels
