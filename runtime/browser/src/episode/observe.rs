//! Observing: what the agent sees of the active tab (snapshot, tabs, the last feedback, a
//! screenshot when asked), and the compact text of it that text policies read.

use crate::allow::origin;
use crate::cdp;
use crate::failure::EndReason;
use crate::snapshot::Snapshot;
use crate::tabs::TabInfo;

use super::spec::TextView;
use super::start::Episode;

/// What the agent sees.
#[derive(Debug, Clone)]
pub struct Observation {
    /// The goal.
    pub goal: String,
    /// Active tab URL.
    pub url: String,
    /// Tabs.
    pub tabs: Vec<TabInfo>,
    /// Viewport in CSS pixels.
    pub viewport: (u32, u32),
    /// Device scale factor.
    pub scale: f64,
    /// Interactive elements and text of the active page.
    pub snapshot: Snapshot,
    /// Feedback of the last step (empty before the first).
    pub feedback: String,
    /// PNG screenshot of the viewport, when asked for.
    pub screenshot: Option<Vec<u8>>,
    /// Steps taken so far.
    pub step: u32,
    /// What [`Observation::text`] shows (the episode's `observe`).
    pub view: TextView,
}

impl Observation {
    /// The compact text observation for text policies: task, URL (path only for loopback
    /// sites), elements with ids, feedback — those of them its [`TextView`] shows. A few
    /// hundred bytes on sandbox pages.
    pub fn text(&self) -> String {
        let view = &self.view;
        let local = self.local_origin();
        let url = match &local {
            Some(_) => wrl_sandbox::checker::url_path(&self.url).to_string(),
            None => self.url.clone(),
        };
        let mut out = format!("task: {}\n", self.goal);
        if view.url {
            out.push_str(&format!("url: {url}\n"));
        }
        if view.tabs && self.tabs.len() > 1 {
            let active = self.tabs.iter().position(|t| t.active).unwrap_or(0);
            out.push_str(&format!("tabs: {} (active {active})\n", self.tabs.len()));
        }
        if let Some(max) = view.elements {
            out.push_str(&self.snapshot.render_items_max(max));
        }
        if let Some(max) = view.html {
            out.push_str(&self.snapshot.render_html_max(max));
        }
        if view.feedback && !self.feedback.is_empty() {
            let feedback = self.without_local_origin(&self.feedback);
            out.push_str(&format!("feedback: {}\n", feedback.replace('\n', "; ")));
        }
        out
    }

    /// The page's origin (`http://127.0.0.1:PORT`) when it is a loopback site. Loopback sites
    /// are shown and recorded by path alone: their port changes from run to run, and a policy
    /// trained on one run's demonstrations must see the same text in the next.
    pub fn local_origin(&self) -> Option<String> {
        origin(&self.url)
            .filter(|o| o.host == "127.0.0.1" || o.host == "localhost")
            .and_then(|_| self.url.find("://").map(|i| i + 3))
            .map(|i| {
                let end = self.url[i..].find('/').map_or(self.url.len(), |j| i + j);
                self.url[..end].to_string()
            })
    }

    /// `text` (a URL or feedback) with this page's loopback origin removed, as trajectories
    /// record it: `http://127.0.0.1:8123/shop/` becomes `/shop/`.
    pub fn without_local_origin(&self, text: &str) -> String {
        match self.local_origin() {
            Some(o) => text.replace(o.as_str(), ""),
            None => text.to_string(),
        }
    }
}

impl Episode {
    /// Evaluates a JavaScript expression in the active tab and returns its JSON value (for
    /// rewards that read page state, and for tests).
    /// The next observation takes a fresh snapshot (the script may have changed the page).
    pub async fn eval_js(&mut self, expr: &str) -> Result<serde_json::Value, String> {
        self.last = None;
        cdp::eval(self.tabs.page(), expr).await
    }

    /// Tabs with their titles.
    pub async fn tabs(&self) -> Vec<TabInfo> {
        self.tabs.infos().await
    }

    /// Observes the active tab: snapshot (ids), tabs, feedback of the last step, and a PNG
    /// screenshot when `screenshot` is true. Errors are environment errors (and end the
    /// episode).
    pub async fn observe(&mut self, screenshot: bool) -> Result<Observation, EndReason> {
        if let Some(EndReason::EnvError { .. } | EndReason::InfraTimeout { .. }) = &self.end {
            return Err(self.end.clone().unwrap_or(EndReason::MaxSteps));
        }
        let snap = match &self.last {
            Some(s) => s.clone(),
            None => match self.tabs.snapshot().await {
                Ok(s) => s,
                Err(e) => {
                    self.end_env(format!("observation failed: {e}"));
                    return Err(self.end.clone().unwrap_or(EndReason::MaxSteps));
                }
            },
        };
        self.last = Some(snap.clone());
        let shot = if screenshot {
            match cdp::screenshot_png(self.tabs.page()).await {
                Ok(png) => Some(png),
                Err(e) => {
                    self.end_env(format!("screenshot failed: {e}"));
                    return Err(self.end.clone().unwrap_or(EndReason::MaxSteps));
                }
            }
        } else {
            None
        };
        let tabs = if self.tabs.len() == 1 {
            vec![TabInfo {
                index: 0,
                url: snap.url.clone(),
                title: snap.title.chars().take(50).collect(),
                active: true,
            }]
        } else {
            self.tabs().await
        };
        Ok(Observation {
            goal: self.spec.goal.clone(),
            url: snap.url.clone(),
            tabs,
            viewport: self.tabs.viewport(),
            scale: self.tabs.scale(),
            snapshot: snap,
            feedback: self.feedback.clone(),
            screenshot: shot,
            step: self.steps,
            view: self.cfg.view.clone(),
        })
    }
}
