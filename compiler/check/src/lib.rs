//! The checker: names, imports, types, units and recipe rules (E02xx–E04xx).
