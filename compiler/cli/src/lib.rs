//! wrlc as a library, so tests can run commands in-process.
