//! Process rewards (OpAgent's RDT): per-step facts read from a finished episode — did the URL
//! change, did the action fail, did a click land on an interactive element, how much did the
//! screen change, is it the same image — and the recipe's `process_reward` expression evaluated on each step.

use wrl_sandbox::Trajectory;

use wrl_plan::Expr;
use wrl_plan::params::Signal;

use super::{EpisodeFacts, RewardExpr, RewardValue, Rewards, StepFacts, evaluate};

/// Roles a click may land on that count as a DOM hit.
const INTERACTIVE: [&str; 9] =
    ["link", "button", "textbox", "checkbox", "radio", "combobox", "option", "menuitem", "tab"];

/// Whether a feedback line reports a failed action.
fn failed(feedback: &str) -> bool {
    feedback.split(';').map(str::trim).any(|l| {
        l.starts_with("failed")
            || l.starts_with("error:")
            || l.starts_with("no element")
            || l.starts_with("blocked")
            || l.contains("value mismatch")
    })
}

/// Whether a feedback line reports a click on an interactive element.
fn hit(feedback: &str) -> bool {
    feedback.split(';').map(str::trim).any(|l| {
        ["clicked ", "double-clicked ", "right-clicked ", "middle-clicked "].iter().any(|p| {
            l.strip_prefix(p).is_some_and(|rest| INTERACTIVE.iter().any(|r| rest.starts_with(r)))
        })
    })
}

/// The fraction of sampled pixels that differ between two PNGs (0 = same, 1 = all differ);
/// `None` when either cannot be decoded or their sizes differ.
pub fn screen_change(a: &[u8], b: &[u8]) -> Option<f64> {
    let a = image::load_from_memory(a).ok()?.to_rgb8();
    let b = image::load_from_memory(b).ok()?.to_rgb8();
    if a.dimensions() != b.dimensions() {
        return None;
    }
    let (w, h) = a.dimensions();
    let (mut seen, mut diff) = (0u64, 0u64);
    // Every 4th pixel in both directions: enough for a similarity, 16x cheaper.
    for y in (0..h).step_by(4) {
        for x in (0..w).step_by(4) {
            seen += 1;
            let (p, q) = (a.get_pixel(x, y).0, b.get_pixel(x, y).0);
            if p.iter().zip(q.iter()).any(|(u, v)| u.abs_diff(*v) > 8) {
                diff += 1;
            }
        }
    }
    Some(if seen == 0 { 0.0 } else { diff as f64 / seen as f64 })
}

/// Whether two PNGs decode to the same pixels (OpAgent's `ssim == 1.0`); `None` when either
/// cannot be decoded.
pub fn screen_same(a: &[u8], b: &[u8]) -> Option<bool> {
    let a = image::load_from_memory(a).ok()?.to_rgb8();
    let b = image::load_from_memory(b).ok()?.to_rgb8();
    Some(a.dimensions() == b.dimensions() && a.as_raw() == b.as_raw())
}

/// The facts of each step of `traj`; `shots` are the screenshots before each step and after the
/// last (as the runner keeps them), used for `screen_changed` when there is one per step.
pub fn step_facts(traj: &Trajectory, start_url: &str, shots: &[Vec<u8>]) -> Vec<StepFacts> {
    let aligned = shots.len() == traj.steps.len() + 1;
    let mut prev_url = start_url.to_string();
    traj.steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let facts = StepFacts {
                url_changed: !s.url.is_empty() && s.url != prev_url,
                action_failed: failed(&s.feedback),
                dom_hit: hit(&s.feedback),
                screen_change: if aligned { screen_change(&shots[i], &shots[i + 1]) } else { None },
                screen_same: if aligned { screen_same(&shots[i], &shots[i + 1]) } else { None },
            };
            prev_url = s.url.clone();
            facts
        })
        .collect()
}

/// The process reward of each step: `expr` evaluated on the episode's facts with that step's.
pub fn process_rewards(
    expr: &RewardExpr,
    rewards: &Rewards,
    episode: &EpisodeFacts,
    steps: &[StepFacts],
) -> Vec<RewardValue> {
    steps
        .iter()
        .map(|s| {
            let f = EpisodeFacts { step: Some(s.clone()), ..episode.clone() };
            evaluate(expr, &f, rewards)
        })
        .collect()
}

/// Whether `expr` (or a reward it names) reads `screen_changed`, so episodes keep a screenshot
/// per step.
pub fn reads_screens(expr: &RewardExpr, rewards: &Rewards) -> bool {
    fn walk(e: &RewardExpr, rewards: &Rewards, depth: usize) -> bool {
        if depth > 64 {
            return false;
        }
        match e {
            Expr::Signal { obj } => matches!(
                obj,
                Signal::ScreenChanged { .. } | Signal::ScreenUnchanged | Signal::VlmProgress(_)
            ),
            Expr::Reward { node } => rewards.get(node).is_some_and(|r| walk(r, rewards, depth + 1)),
            Expr::Unary { arg, .. } => walk(arg, rewards, depth + 1),
            Expr::Binary { lhs, rhs, .. } => {
                walk(lhs, rewards, depth + 1) || walk(rhs, rewards, depth + 1)
            }
            Expr::If { cond, then, otherwise } => {
                walk(cond, rewards, depth + 1)
                    || walk(then, rewards, depth + 1)
                    || walk(otherwise, rewards, depth + 1)
            }
            Expr::Const { .. } | Expr::Bool { .. } => false,
        }
    }
    walk(expr, rewards, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wrl_sandbox::{TrajOutcome, TrajStep};

    fn png(color: [u8; 3]) -> Vec<u8> {
        let img = image::RgbImage::from_pixel(16, 16, image::Rgb(color));
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_to(&mut out, image::ImageFormat::Png).unwrap();
        out.into_inner()
    }

    #[test]
    fn steps_read_url_feedback_and_screens() {
        let step = |url: &str, feedback: &str| TrajStep {
            observation: String::new(),
            actions: vec!["click 1".into()],
            feedback: feedback.into(),
            url: url.into(),
            screenshot: None,
            boxes: None,
            said: None,
            malformed: false,
        };
        let traj = Trajectory {
            task_id: "t".into(),
            template: "x".into(),
            goal: "g".into(),
            agent: "p".into(),
            steps: vec![
                step("/shop/", "clicked button \"Search\""),
                step("/shop/search", "clicked link \"red mug\"; navigated to /shop/search"),
                step("/shop/search", "no element [99] on this page"),
            ],
            outcome: TrajOutcome {
                reason: wrl_sandbox::Ending::MaxSteps,
                message: String::new(),
                answer: None,
                success: false,
                detail: String::new(),
                reward: None,
            },
            elapsed_ms: 1,
        };
        let shots =
            vec![png([0, 0, 0]), png([0, 0, 0]), png([255, 255, 255]), png([255, 255, 255])];
        let f = step_facts(&traj, "/shop/", &shots);
        assert_eq!(f.iter().map(|s| s.url_changed).collect::<Vec<_>>(), [false, true, false]);
        assert_eq!(f.iter().map(|s| s.action_failed).collect::<Vec<_>>(), [false, false, true]);
        assert_eq!(f.iter().map(|s| s.dom_hit).collect::<Vec<_>>(), [true, true, false]);
        assert_eq!(
            f.iter().map(|s| s.screen_change).collect::<Vec<_>>(),
            [Some(0.0), Some(1.0), Some(0.0)]
        );
        assert_eq!(
            f.iter().map(|s| s.screen_same).collect::<Vec<_>>(),
            [Some(true), Some(false), Some(true)]
        );
        // Without one screenshot per step there is no screen fact.
        assert!(step_facts(&traj, "/shop/", &shots[..2]).iter().all(|s| s.screen_change.is_none()));
    }

    #[test]
    fn an_rdt_tree_scores_each_step() {
        use crate::reward::tests::sig;
        let c = |value| Box::new(Expr::Const { value });
        let iff = |cond, then, otherwise| Expr::If { cond: Box::new(cond), then, otherwise };
        let hit_and_changed = Expr::Binary {
            bin: wrl_plan::BinOp::And,
            lhs: Box::new(sig(Signal::DomHit)),
            rhs: Box::new(sig(Signal::ScreenChanged { threshold: 0.02 })),
        };
        let expr = iff(
            sig(Signal::ActionFailed),
            c(0.0),
            Box::new(iff(
                sig(Signal::UrlChanged),
                c(1.0),
                Box::new(iff(hit_and_changed, c(0.5), c(0.0))),
            )),
        );
        let s = |url_changed, action_failed, dom_hit, change| StepFacts {
            url_changed,
            action_failed,
            dom_hit,
            screen_change: Some(change),
            screen_same: Some(change == 0.0),
        };
        let steps = [
            s(true, true, true, 1.0),
            s(true, false, true, 0.0),
            s(false, false, true, 0.5),
            s(false, false, true, 0.0),
        ];
        let got = process_rewards(
            &expr,
            &Rewards::new(),
            &crate::reward::tests::facts(wrl_sandbox::Ending::Completed),
            &steps,
        );
        assert!(reads_screens(&expr, &Rewards::new()));
        let want = [0.0, 1.0, 0.5, 0.0].map(RewardValue::Value);
        assert_eq!(got, want);
    }

    /// OpAgent's released RDT (`WebBrowserTool.calculate_reward`, without its VLM branch):
    /// penalty leaves only, so the outcome reward is never swamped.
    #[test]
    fn opagents_penalty_tree_scores_each_step() {
        use crate::reward::tests::sig;
        let c = |value| Box::new(Expr::Const { value });
        let iff = |cond, then, otherwise| Expr::If { cond: Box::new(cond), then, otherwise };
        let expr = iff(
            sig(Signal::ActionFailed),
            c(-0.001),
            Box::new(iff(
                sig(Signal::UrlChanged),
                c(0.0),
                Box::new(iff(
                    sig(Signal::DomHit),
                    c(0.0),
                    Box::new(iff(sig(Signal::ScreenUnchanged), c(-0.001), c(0.0))),
                )),
            )),
        );
        let s = |action_failed, url_changed, dom_hit, same| StepFacts {
            url_changed,
            action_failed,
            dom_hit,
            screen_change: Some(if same { 0.0 } else { 0.5 }),
            screen_same: Some(same),
        };
        let steps = [
            s(true, true, true, false),
            s(false, true, false, true),
            s(false, false, true, true),
            s(false, false, false, true),
            s(false, false, false, false),
        ];
        let got = process_rewards(
            &expr,
            &Rewards::new(),
            &crate::reward::tests::facts(wrl_sandbox::Ending::Completed),
            &steps,
        );
        assert_eq!(got, [-0.001, 0.0, 0.0, -0.001, 0.0].map(RewardValue::Value));
        // A step without screenshots cannot say whether the screen stayed the same.
        let blind = [StepFacts { screen_same: None, ..steps[3].clone() }];
        let got = process_rewards(
            &expr,
            &Rewards::new(),
            &crate::reward::tests::facts(wrl_sandbox::Ending::Completed),
            &blind,
        );
        assert!(matches!(got[..], [RewardValue::Excluded(_)]), "{got:?}");
    }
}
