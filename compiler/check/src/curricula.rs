//! Phases given as a rule: `phases = horizon_curriculum(start: 5 steps, grow: 5 steps, every:
//! 10 iters, until: 15 steps, lr: 1e-4)` is laid out by the checker as the list of phases it
//! stands for, so the rules, the plan, the estimate and every backend see ordinary phases.

use std::collections::BTreeMap;

use wrl_diagnostics::{Diagnostic, Span};
use wrl_syntax::tokens::Dimension;

use crate::types::show_num;
use crate::value::{Obj, V, Val};

/// The most phases a curriculum may lay out.
const MAX_PHASES: usize = 1000;

/// The phases of curriculum `o` (written at `span`), or why it cannot be laid out (E0442).
pub(crate) fn phases(o: &Obj, span: Span) -> Result<Val, Diagnostic> {
    let num = |f: &str| o.fields.get(f).and_then(Val::as_f64);
    let at = |f: &str| o.fields.get(f).map_or(span, |v| v.span);
    let (Some(start), Some(grow), Some(every), Some(until), Some(lr)) =
        (num("start"), num("grow"), num("every"), num("until"), num("lr"))
    else {
        // A field that did not check has its own error already.
        return Ok(Val::new(V::Unknown, span));
    };
    if until < start {
        return Err(Diagnostic::new(
            "E0442",
            format!(
                "the curriculum ends at {} steps, before it starts at {} steps",
                show_num(until),
                show_num(start)
            ),
        )
        .label(at("until"), "the last phase's horizon")
        .label(at("start"), "the first phase's horizon")
        .help(format!("end at or past the start, e.g. `until: {} steps`", show_num(start))));
    }
    let count = ((until - start) / grow).ceil() as usize + 1;
    if count > MAX_PHASES {
        return Err(Diagnostic::new(
            "E0442",
            format!("the curriculum lays out {count} phases, more than {MAX_PHASES}"),
        )
        .label(at("grow"), format!("{} steps at a time", show_num(grow)))
        .help("grow the horizon by more steps at a time, or write the phases as a list"));
    }
    let qty = |value: f64, dim: Dimension| Val::new(V::Qty { value, dim }, span);
    let items = (0..count)
        .map(|i| {
            let horizon = (start + grow * i as f64).min(until);
            let fields = BTreeMap::from([
                ("iters".to_string(), qty(every, Dimension::Iters)),
                ("horizon".to_string(), qty(horizon, Dimension::Steps)),
                ("lr".to_string(), Val::new(V::Num { value: lr }, span)),
            ]);
            Val::new(V::Record { fields }, span)
        })
        .collect();
    Ok(Val::new(V::List { items }, span))
}
