//! Lowering of a checked recipe to the execution plan (a petgraph DAG of stages).
