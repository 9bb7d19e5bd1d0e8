; Scopes and definitions: declarations are visible in the whole file, modules inside their graph.
(source_file) @local.scope
(block) @local.scope

(declaration name: (identifier) @local.definition.var)
(module_item name: (identifier) @local.definition.function)
(tool_item name: (identifier) @local.definition.function)
(builtin_item name: (identifier) @local.definition.function)
(parameter name: (identifier) @local.definition.parameter)
(use_item alias: (identifier) @local.definition.import)
(use_group (identifier) @local.definition.import)

(path . (identifier) @local.reference)
(edge (identifier) @local.reference)
