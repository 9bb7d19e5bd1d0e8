//! Screenshot pixel budgets (E0420): an `hf(…)` model's `image_max_pixels` sizes each screenshot
//! the way its processor will (`smart_resize` to the family's patch × merge grid), so the context
//! budget (E0404) and the estimate count a screenshot's tokens from the env's viewport instead of
//! a hand-written `image_tokens`. That needs a vision-language family the checker knows the grid
//! of, and leaves `image_tokens` with nothing to say.

use wrl_diagnostics::Diagnostic;

use super::{Ctx, num, word};
use crate::sequence::image_factor;
use crate::value::Obj;

pub(super) fn check(ctx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    super::each_written_obj(ctx, &mut |o| model(ctx, o, out));
}

fn model(ctx: &Ctx<'_>, o: &Obj, out: &mut Vec<Diagnostic>) {
    if o.kind != "model" || o.ctor != "hf" {
        return;
    }
    let Some(budget) = o.fields.get("image_max_pixels").filter(|b| num(b).is_some()) else {
        return;
    };
    let family = o.fields.get("family").and_then(word).unwrap_or("auto");
    if image_factor(family).is_none() {
        let help = if family == "auto" {
            "name the model's `family` (`qwen3_vl`: 32-pixel tokens, `qwen2_5_vl`: 28): the \
             checker sizes screenshots before any `config.json` is read"
        } else {
            "a text model reads no screenshots: remove `image_max_pixels`, or name the \
             vision-language model this recipe means"
        };
        out.push(
            Diagnostic::new(
                "E0420",
                format!(
                    "`image_max_pixels` needs a vision-language `family` (`qwen3_vl` or \
                     `qwen2_5_vl`), and this model's is `{family}`"
                ),
            )
            .label(budget.span, "a pixel budget for screenshots")
            .help(help),
        );
    }
    if let Some(tokens) = o.fields.get("image_tokens").filter(|t| !ctx.is_default(t)) {
        out.push(
            Diagnostic::new(
                "E0420",
                "`image_tokens` and `image_max_pixels` both size a screenshot".to_string(),
            )
            .label(tokens.span, "a count written by hand")
            .label(budget.span, "the processor's budget, counted from the env's viewport")
            .help(
                "remove `image_tokens`: with `image_max_pixels`, a screenshot's tokens are what \
                 the processor makes of the viewport",
            ),
        );
    }
}
