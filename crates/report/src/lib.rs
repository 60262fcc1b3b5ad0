//! cosched-report
