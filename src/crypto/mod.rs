//! The crypto speed suite (spec/crypto.md): engines, timing loop, `openssl speed` import.
