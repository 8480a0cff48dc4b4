//! IQ1 quantizers (in progress).
