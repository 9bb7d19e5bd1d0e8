//! A vision-language policy's turn on a screenshot: the screenshot read by the checkpoint's own
//! processor, its place in the observation's text marked until the conversation is fitted, then
//! the last K screenshots of the conversation (the env's `screenshot(last: K, older)`) written as
//! the model's image placeholder — `<|vision_start|><|image_pad|><|vision_end|>`, rendered by the
//! model's own chat template and its pad expanded to the image's tokens (grid / merge²) — and the
//! older ones as nothing or the line `[screenshot omitted]`; every turn's text stays. The turn is
//! sampled through the whole model, from the episode's seeded stream.

use std::collections::BTreeSet;
use std::sync::Mutex;

use wrl_trainer::vision::{IMAGE_PLACEHOLDER, Pixels};
use wrl_trainer::{Role, SampleParams, Segment, Trainer, Trajectory, render_prompt_with};

use super::conversation::Chat;
use super::hermes::Hermes;
use super::prompt::{SCREEN_OMITTED, Screens, Window, split_task};
use super::sample::{Turn, blocking, turn_of};

/// Brackets a screenshot's index in an observation's text until the prompt is rendered.
const MARK: char = '\u{1}';

/// A screenshot the episode has shown: its pixels and the image tokens they take.
#[derive(Clone, Debug)]
pub struct Shot {
    pub pixels: Pixels,
    pub tokens: usize,
}

/// `png` read as the policy's processor reads an image; `Err` for a text policy or a file that
/// is not an image.
pub fn read_screen(trainer: &Mutex<Trainer>, png: &[u8]) -> Result<Shot, String> {
    let t = trainer.lock().map_err(|_| "the policy is unusable (a poisoned lock)".to_string())?;
    let side = t.model().vision().ok_or("the policy reads text only")?;
    let pixels = side.read_image(png).map_err(|e| e.to_string())?;
    let tokens = side.pads(&pixels);
    Ok(Shot { pixels, tokens })
}

/// Whether `trainer`'s policy reads images.
pub fn sees(trainer: &Mutex<Trainer>) -> bool {
    trainer.lock().is_ok_and(|t| t.model().vision().is_some())
}

/// `observation` with screenshot `i` marked after its task line (before the page).
pub fn marked(observation: &str, i: usize) -> String {
    let (task, page) = split_task(observation);
    let mark = format!("{MARK}{i}{MARK}\n");
    if task.is_empty() { format!("{mark}{page}") } else { format!("{task}\n{mark}{page}") }
}

/// The indexes of the marks in `text`, in order.
fn marks(text: &str) -> Vec<usize> {
    text.split(MARK).skip(1).step_by(2).filter_map(|i| i.parse().ok()).collect()
}

/// Writes each mark of `segments` as the model's image placeholder when it is one of the last
/// `screens.last` marked, else as [`SCREEN_OMITTED`] (`older = placeholder`) or nothing; returns
/// the kept screenshots' pixels in the order their placeholders stand.
pub fn resolve(segments: &mut [Segment], shots: &[Shot], screens: Screens) -> Vec<Pixels> {
    let mut images = Vec::new();
    resolve_marks(segments, shots.len(), screens, &mut |i| {
        let shot = shots.get(i)?;
        images.push(shot.pixels.clone());
        Some(format!("{IMAGE_PLACEHOLDER}\n"))
    });
    images
}

/// Writes each mark of `segments` as `kept(i)` says when screenshot `i` is one of the last
/// `screens.last` marked of the `count` taken (`None`: as an older one), an older one as
/// [`SCREEN_OMITTED`] (`older = placeholder`) or nothing. One rule for which screenshots a turn
/// keeps, whoever writes them: a local model's placeholders, an endpoint's image parts.
pub fn resolve_marks(
    segments: &mut [Segment],
    count: usize,
    screens: Screens,
    kept: &mut dyn FnMut(usize) -> Option<String>,
) {
    let order: Vec<usize> = segments.iter().flat_map(|s| marks(&s.text)).collect();
    let last: BTreeSet<usize> =
        order.iter().rev().filter(|&&i| i < count).take(screens.last).copied().collect();
    for s in segments.iter_mut() {
        if !s.text.contains(MARK) {
            continue;
        }
        let mut out = String::with_capacity(s.text.len());
        let mut parts = s.text.split(MARK);
        out.push_str(parts.next().unwrap_or(""));
        while let (Some(index), Some(rest)) = (parts.next(), parts.next()) {
            let i = index.parse::<usize>().ok();
            let rest = rest.strip_prefix('\n').unwrap_or(rest);
            match i.filter(|i| last.contains(i)).and_then(&mut *kept) {
                Some(text) => out.push_str(&text),
                None if screens.placeholder => {
                    out.push_str(SCREEN_OMITTED);
                    out.push('\n');
                }
                None => {}
            }
            out.push_str(rest);
        }
        s.text = out;
    }
}

/// The screenshot index a kept mark stands for, and where: `text` split at the marks
/// [`resolve_marks`] left in it (`kept` writing [`image_mark`]), as text and image indexes in
/// order.
pub fn split_images(text: &str) -> Vec<Result<&str, usize>> {
    let mut out = Vec::new();
    for (k, part) in text.split(MARK).enumerate() {
        if k % 2 == 0 {
            if !part.is_empty() {
                out.push(Ok(part));
            }
        } else if let Ok(i) = part.parse() {
            out.push(Err(i));
        }
    }
    out
}

/// A kept screenshot's mark, left in the text for [`split_images`].
pub fn image_mark(i: usize) -> String {
    format!("{MARK}{i}{MARK}")
}

/// The image tokens of the last `screens.last` screenshots of `shots`: what they take of the
/// context's room.
pub fn kept_tokens(shots: &[Shot], screens: Screens) -> usize {
    shots.iter().rev().take(screens.last).map(|s| s.tokens).sum()
}

/// One turn of the vision-language policy on `segments` (rendered with `tools` by the model's
/// own template) holding `images`: its pads expanded, sampled from the episode's `stream` (or a
/// fork of the trainer's RNG). `Err` names why no turn came: a prompt past the context (its
/// image tokens counted) is a `context_overflow`.
pub fn sample_seeing(
    trainer: &Mutex<Trainer>,
    segments: &[Segment],
    images: &[Pixels],
    params: &SampleParams,
    stream: Option<u64>,
    tools: &[String],
) -> Result<(Turn, String), String> {
    blocking(|| {
        let (mut sampler, context) = {
            let mut t = trainer.lock().map_err(|_| "the policy is unusable".to_string())?;
            let context = t.model().context();
            let s = match stream {
                Some(s) => t.sampler_for(s),
                None => t.sampler(),
            };
            (s, context)
        };
        let ids = render_prompt_with(sampler.tokenizer(), segments, tools)
            .map_err(|e| format!("the prompt did not render: {e}"))?;
        let side = sampler.vision().ok_or("the policy reads text only")?;
        let prompt = side.expand(&ids, images).map_err(|e| e.to_string())?;
        if prompt.len() >= context {
            let tokens: usize = images.iter().map(|p| side.pads(p)).sum();
            return Err(format!(
                "context_overflow: the turn's prompt holds {} tokens ({tokens} of them for {} \
                 screenshot(s)), the policy's whole context of {context}",
                prompt.len(),
                images.len()
            ));
        }
        let mut outs = sampler.sample_images(&prompt, images, params).map_err(|e| e.to_string())?;
        if outs.is_empty() {
            return Err("the policy wrote no completion".into());
        }
        let (turn, text) = turn_of(prompt, outs.swap_remove(0));
        let images = images.iter().cloned().map(std::sync::Arc::new).collect();
        Ok((Turn { images, ..turn }, text))
    })
}

/// Per-turn SFT examples of an expert trajectory for a vision-language policy, each with the
/// images its prompt holds: the conversation the policy will be shown (`agent::policy::
/// sft_examples`' with `hide_thinking`), each step's screenshot (`shots`, in step order; `None`
/// for a step without one) marked in its observation, the room fitted to what the kept
/// screenshots' tokens leave, the last `screens.last` as images and the older ones as the env
/// says, as [`TrainerPolicy::act_vl`](super::policy::TrainerPolicy::act_vl) builds a turn.
pub fn sft_examples_seeing(
    traj: &wrl_sandbox::Trajectory,
    (hide_thinking, window, screens): (bool, Window, Screens),
    hermes: &Hermes,
    shots: Vec<Option<Shot>>,
) -> Result<Vec<(Trajectory, Vec<Pixels>)>, String> {
    let mut chat = Chat::new(hide_thinking);
    let mut seen: Vec<Shot> = Vec::new();
    let mut out = Vec::new();
    for (step, shot) in traj.steps.iter().zip(shots.into_iter().chain(std::iter::repeat(None))) {
        let assistant = hermes.demo(&step.actions, step.boxes.as_ref(), &traj.goal)?;
        let text = match shot {
            Some(shot) => {
                seen.push(shot);
                marked(&step.observation, seen.len() - 1)
            }
            None => step.observation.clone(),
        };
        let room = window.room.saturating_sub(kept_tokens(&seen, screens));
        if room == 0 {
            return Err(format!(
                "step {}: its kept screenshots take {} tokens, all the room of {} an example \
                 leaves for the conversation",
                out.len() + 1,
                kept_tokens(&seen, screens),
                window.room
            ));
        }
        let mut segments = chat.prompt(&text, Window { room, ..window });
        // Earlier turns are context: only this step's calls are trained.
        for s in segments.iter_mut().filter(|s| s.role == Role::Assistant) {
            s.train = Some(false);
        }
        chat.answered(assistant.clone());
        let images = resolve(&mut segments, &seen, screens);
        segments.push(assistant);
        out.push((Trajectory { segments, tools: hermes.schemas.clone() }, images));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wrl_trainer::vision::Grid;

    fn shot(i: usize) -> Shot {
        let grid = Grid { t: 1, h: 2, w: 2 };
        Shot { pixels: Pixels { values: vec![i as f32], rows: 1, cols: 1, grid }, tokens: 1 }
    }

    #[test]
    fn the_last_screens_stay_and_older_ones_leave_a_line() {
        let shots: Vec<Shot> = (0..3).map(shot).collect();
        let mut segs = vec![
            Segment::new(Role::User, marked("task: buy\n[1] a", 0)),
            Segment::new(Role::Assistant, "x"),
            Segment::new(Role::Tool, split_task(&marked("task: buy\n[2] b", 1)).1.to_string()),
            Segment::new(Role::Assistant, "y"),
            Segment::new(Role::Tool, split_task(&marked("task: buy\n[3] c", 2)).1.to_string()),
        ];
        assert_eq!(marks(&segs[0].text), [0]);
        let screens = Screens { last: 2, placeholder: true };
        let mut kept = segs.clone();
        let images = resolve(&mut kept, &shots, screens);
        let values: Vec<f32> = images.iter().map(|p| p.values[0]).collect();
        assert_eq!(values, [1.0, 2.0], "the last two, in order");
        assert_eq!(kept[0].text, "task: buy\n[screenshot omitted]\n[1] a");
        assert_eq!(kept[2].text, format!("{IMAGE_PLACEHOLDER}\n[2] b"));
        let dropped = resolve(&mut segs, &shots, Screens { last: 1, placeholder: false });
        assert_eq!(dropped.len(), 1);
        assert_eq!(segs[0].text, "task: buy\n[1] a");
        assert_eq!(segs[2].text, "[2] b");
        assert_eq!(kept_tokens(&shots, screens), 2);
    }
}
