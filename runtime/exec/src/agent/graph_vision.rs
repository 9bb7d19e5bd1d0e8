//! A graph module shown screenshots (`inputs = [screenshot, …]`, its brain a vision-language
//! policy, its env `screenshot(last: K, older)` with K > 0): the episode's screenshots read by
//! that policy's own processor, the last K of them written as the model's image placeholders
//! at the head of the module's one user message (an older one as `[screenshot omitted]` or
//! nothing, as the env says), its text fitted to the room their image tokens leave; and the
//! SFT examples of such a module, each step's screenshot in the same place. A module's turn is
//! one message, not a conversation: the images stand before its page and notes. A module
//! whose brain is an `api(…)` model is sent the same screenshots as `image_url` parts of that
//! message (PNG data URLs), as a ReAct agent's served policy is; whether it reads them is the
//! endpoint's to say.

use std::collections::BTreeMap;
use std::sync::Mutex;

use base64::Engine;
use serde_json::{Value as Json, json};
use wrl_trainer::vision::Pixels;
use wrl_trainer::{Role, Segment, Trainer, Trajectory};

use super::hermes::Hermes;
use super::prompt::{History, SCREEN_OMITTED, Screens, Window, prompt_cut, split_task};
use super::vision::{Shot, kept_tokens, marked, read_screen, resolve};

/// The screenshots of one graph episode: each step's PNG as the env took it, and each
/// module's reading of them (by its own policy's processor), read when the module is next
/// called.
#[derive(Debug, Default)]
pub struct Seen {
    pngs: Vec<Vec<u8>>,
    read: BTreeMap<String, Vec<Shot>>,
}

impl Seen {
    /// Keeps the step's screenshot.
    pub fn took(&mut self, png: &[u8]) {
        self.pngs.push(png.to_vec());
    }

    /// The episode's screenshots as module `name`'s policy (`trainer`) reads them, oldest
    /// first: those taken since its last call read now. `Err` names a screenshot that is no
    /// image.
    pub fn shots_for(&mut self, name: &str, trainer: &Mutex<Trainer>) -> Result<&[Shot], String> {
        let shots = self.read.entry(name.to_string()).or_default();
        for png in &self.pngs[shots.len()..] {
            shots.push(read_screen(trainer, png).map_err(|why| format!("the screenshot: {why}"))?);
        }
        Ok(shots)
    }
}

/// The chat messages of an `api(…)` module's call: its `system` prompt (none when empty), then
/// its user `text` — after the episode's screenshots where it is shown them (`seen`): the last
/// `screens.last` as `image_url` parts, an older one as the line `[screenshot omitted]` where the
/// env keeps a placeholder.
pub fn api_messages(system: &str, text: &str, seen: Option<(&Seen, Screens)>) -> Vec<Json> {
    let mut messages = Vec::new();
    if !system.is_empty() {
        messages.push(json!({"role": "system", "content": system}));
    }
    let content = match seen {
        None => Json::String(text.to_string()),
        Some((seen, screens)) => {
            let older = seen.pngs.len().saturating_sub(screens.last);
            let lead: String = if screens.placeholder {
                (0..older).map(|_| format!("{SCREEN_OMITTED}\n")).collect()
            } else {
                String::new()
            };
            let b64 = |png: &[u8]| base64::engine::general_purpose::STANDARD.encode(png);
            let mut parts: Vec<Json> = (seen.pngs[older..].iter())
                .map(|png| {
                    let url = format!("data:image/png;base64,{}", b64(png));
                    json!({"type": "image_url", "image_url": {"url": url}})
                })
                .collect();
            parts.push(json!({"type": "text", "text": format!("{lead}{text}")}));
            Json::Array(parts)
        }
    };
    messages.push(json!({"role": "user", "content": content}));
    messages
}

/// A module's user text `text` with the episode's screenshots `shots` (oldest first) before
/// it: the last `screens.last` as image placeholders, the older as `screens` says; the one
/// user segment and the kept screenshots' pixels, in the order their placeholders stand.
pub fn module_message(text: &str, shots: &[Shot], screens: Screens) -> (Vec<Segment>, Vec<Pixels>) {
    let marks: String = (0..shots.len()).map(|i| marked("", i)).collect();
    let mut segments = vec![Segment::new(Role::User, format!("{marks}{text}"))];
    let images = resolve(&mut segments, shots, screens);
    (segments, images)
}

/// The room a module's text has beside the kept screenshots' image tokens: `room` less them.
pub fn room_beside(room: usize, shots: &[Shot], screens: Screens) -> usize {
    room.saturating_sub(kept_tokens(shots, screens))
}

/// Per-step SFT examples of a graph's acting module shown screenshots, from an expert
/// trajectory: each step's prompt as the module's text examples show it (the page, the actions
/// so far and the task: `agent::policy::sft_examples` with `action_only`), fitted to the room
/// the kept screenshots' tokens leave, with the step's screenshot (`shots`, in step order;
/// `None` for a step without one) and the last `screens.last` before it as images at its head,
/// as [`module_message`] writes a rollout's turn; the step's calls trained.
pub fn module_sft_examples(
    traj: &wrl_sandbox::Trajectory,
    (window, screens): (Window, Screens),
    hermes: &Hermes,
    shots: Vec<Option<Shot>>,
) -> Result<Vec<(Trajectory, Vec<Pixels>)>, String> {
    let mut seen: Vec<Shot> = Vec::new();
    let mut history: Vec<String> = Vec::new();
    let mut past: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for (step, shot) in traj.steps.iter().zip(shots.into_iter().chain(std::iter::repeat(None))) {
        let assistant = hermes.demo(&step.actions, step.boxes.as_ref(), &traj.goal)?;
        seen.extend(shot);
        let room = room_beside(window.room, &seen, screens);
        if room == 0 {
            return Err(format!(
                "step {}: its kept screenshots take {} tokens, all the room of {} an example \
                 leaves for the module's text",
                out.len() + 1,
                kept_tokens(&seen, screens),
                window.room
            ));
        }
        let text = prompt_cut(
            &step.observation,
            &past,
            &history,
            History::ActionOnly,
            Window { room, ..window },
        );
        let (mut segments, images) = module_message(&text, &seen, screens);
        segments.push(assistant);
        out.push((Trajectory { segments, tools: hermes.schemas.clone() }, images));
        history.extend(step.actions.iter().cloned());
        past.push(split_task(&step.observation).1.to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wrl_trainer::vision::{Grid, IMAGE_PLACEHOLDER};

    fn shot(i: usize) -> Shot {
        let grid = Grid { t: 1, h: 2, w: 2 };
        Shot { pixels: Pixels { values: vec![i as f32], rows: 1, cols: 1, grid }, tokens: 10 }
    }

    /// The last K screenshots head the message as placeholders, oldest first; an older one
    /// leaves its line or nothing; the room is what their tokens leave.
    #[test]
    fn the_last_screens_head_the_modules_message() {
        let shots: Vec<Shot> = (0..3).map(shot).collect();
        let placeholder = Screens { last: 2, placeholder: true };
        let (segs, images) = module_message("[1] a\ntask: buy", &shots, placeholder);
        assert_eq!(segs.len(), 1);
        assert_eq!(
            segs[0].text,
            format!(
                "[screenshot omitted]\n{IMAGE_PLACEHOLDER}\n{IMAGE_PLACEHOLDER}\n[1] a\ntask: buy"
            )
        );
        let values: Vec<f32> = images.iter().map(|p| p.values[0]).collect();
        assert_eq!(values, [1.0, 2.0]);
        let drop = Screens { last: 1, placeholder: false };
        let (segs, images) = module_message("x", &shots, drop);
        assert_eq!(segs[0].text, format!("{IMAGE_PLACEHOLDER}\nx"));
        assert_eq!(images.len(), 1);
        let (segs, images) = module_message("x", &[], drop);
        assert_eq!((segs[0].text.as_str(), images.len()), ("x", 0));
        assert_eq!(room_beside(100, &shots, placeholder), 80);
        assert_eq!(room_beside(5, &shots, placeholder), 0);
    }
}
