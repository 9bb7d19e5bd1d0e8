# Helix capture names for queries/highlights.scm (nvim-treesitter names):
#   sed -f helix.sed queries/highlights.scm > queries/helix/highlights.scm
# editors/check.sh fails when the Helix copy is stale.
1s/^; Highlights for .wrl.*$/; Highlights for .wrl, Helix capture names. Generated from ..\/highlights.scm by helix.sed./
s/@comment\.documentation/@comment.line.documentation/g
s/(comment) @comment$/(comment) @comment.line/
s/@string\.escape/@constant.character.escape/g
s/@number/@constant.numeric/g
s/@boolean/@constant.builtin.boolean/g
s/@keyword\.conditional/@keyword.control.conditional/g
s/@keyword\.repeat/@keyword.control.repeat/g
s/@keyword\.import/@keyword.control.import/g
s/@keyword\.type/@keyword.storage.type/g
s/@function\.method\.call/@function.method/g
s/@function\.call/@function/g
s/@module\.builtin/@namespace/g
s/@module/@namespace/g
s/@property/@variable.other.member/g
