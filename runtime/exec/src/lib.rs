//! The wrl runtime: executes a plan produced by `wrl-plan`. It never sees syntax.
