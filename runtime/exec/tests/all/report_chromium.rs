//! The run report as a person sees it: a run directory with every kind of record is turned into
//! `report.html`, which real headless Chromium opens from disk (no network); the test asserts
//! the sections, the charts and the embedded pages, clicks a page to full size and back, and
//! saves a full-page screenshot (`$CARGO_TARGET_TMPDIR/report.png`) to look at.

#![allow(clippy::unwrap_used)] // test helpers fail loudly, like the tests they serve

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use chromiumoxide::page::ScreenshotParams;
use futures::StreamExt as _;
use wrl_exec::rundir::records::{EvalLine, RlIter, Scored, SftStep};
use wrl_exec::{Cursor, EvalResult, MetricLine, RunDir, Summary, TrajectoryLine};
use wrl_sandbox::{TrajOutcome, TrajStep, Trajectory};

const PLAN: &str = r#"{"version": 1, "recipe": "recipes/quickstart.wrl", "profile": null,
  "nodes": [{"id": "stage:online/phase:1", "kind": "rl_phase", "decl": "online", "ctor": "grpo",
             "params": {"group": {"type": "num", "value": 4.0}}}],
  "edges": []}"#;

fn png(root: &Path, name: &str, shade: u8) -> String {
    let img = image::RgbImage::from_fn(1280, 720, |x, y| {
        if y < 60 { image::Rgb([40, 60, 160]) } else { image::Rgb([shade, (x % 255) as u8, 230]) }
    });
    let rel = format!("screens/{name}.png");
    std::fs::create_dir_all(root.join("screens")).unwrap();
    img.save(root.join(&rel)).unwrap();
    rel
}

fn episode(
    id: u64,
    node: &str,
    reason: &str,
    success: bool,
    shots: Option<Vec<String>>,
) -> TrajectoryLine {
    let step = |i: usize| TrajStep {
        observation: format!("url: /shop/\n[1] link \"Shop\" <step {i}>"),
        actions: vec![format!("click {i}")],
        feedback: "clicked link \"Shop\"".into(),
        url: "/shop/".into(),
        screenshot: None,
        boxes: None,
        said: None,
        malformed: false,
    };
    TrajectoryLine {
        id,
        node: node.into(),
        iter: if node.starts_with("eval:") { 0 } else { 1 + id / 4 },
        group: 0,
        reward: Scored::Value(if success { 1.0 } else { 0.0 }),
        components: Default::default(),
        trajectory: Trajectory {
            task_id: format!("test-{id}"),
            template: if id.is_multiple_of(2) { "shop_price".into() } else { "wiki_open".into() },
            goal: "What is the price of the blue bottle?".into(),
            agent: "policy".into(),
            steps: (1..=2).map(step).collect(),
            outcome: TrajOutcome {
                reason: reason.parse().expect("an ending's word"),
                message: String::new(),
                answer: success.then(|| "53.01".into()),
                success,
                detail: "expected \"53.01\"".into(),
                reward: None,
            },
            elapsed_ms: 900,
        },
        branch: None,
        screenshots: shots,
        sequence: None,
    }
}

/// A finished run directory: SFT steps, RL iterations, one evaluation with pages.
fn run_dir(root: &Path) {
    let mut run = RunDir::create(root, PLAN).unwrap();
    let mut lines = Vec::new();
    for step in 1..=30u64 {
        lines.push(MetricLine::Sft(SftStep {
            stage: "warmup".into(),
            node: "stage:warmup".into(),
            step,
            loss: 3.0 / step as f64,
            lr: 1e-4,
            grad_norm: 2.0,
            epoch: Some(0),
            global_step: 0,
            phase: None,
            time: 0.0,
            memory: Default::default(),
        }));
    }
    for iter in 1..=6u64 {
        lines.push(MetricLine::Rl(RlIter {
            stage: "online".into(),
            node: "stage:online/phase:1".into(),
            iter,
            reward: 0.1 * iter as f64,
            success: 0.1 * iter as f64,
            uniform_groups: 1,
            loss: 0.05,
            lr: 1e-5,
            grad_norm: 0.5,
            clip_frac: Some(0.01),
            replayed: None,
            branches: None,
            trimmed: None,
            generated: None,
            value_loss: None,
            critic_lr: None,
            step_advantage: None,
            samples: 32,
            images: None,
            rollout_s: 10.0,
            update_s: 5.0,
            retried: 0,
            excluded: BTreeMap::new(),
            components: BTreeMap::new(),
            roles: None,
            global_step: 0,
            phase: None,
            time: 0.0,
            memory: Default::default(),
        }));
    }
    lines.push(MetricLine::Eval(EvalLine {
        stage: "after_rl".into(),
        node: "eval:after_rl".into(),
        after: "online".into(),
        success: 0.5,
        mean_reward: None,
        episodes: 4,
        subsets: Default::default(),
        global_step: 0,
        phase: None,
        time: 0.0,
    }));
    run.log_metrics(lines).unwrap();
    let mut trajs: Vec<TrajectoryLine> = (0..8)
        .map(|i| {
            episode(
                i,
                "stage:online/phase:1",
                ["completed", "max_steps"][i as usize % 2],
                i % 3 == 0,
                None,
            )
        })
        .collect();
    for (i, (reason, success)) in
        [("completed", true), ("max_steps", false), ("completed", false), ("agent_error", false)]
            .into_iter()
            .enumerate()
    {
        let id = 8 + i as u64;
        let shots = (0..3).map(|k| png(root, &format!("{id}-{k}"), 60 * i as u8)).collect();
        trajs.push(episode(id, "eval:after_rl", reason, success, Some(shots)));
    }
    run.append_trajectories(&trajs).unwrap();
    let result = EvalResult {
        eval: "after_rl".into(),
        after: "online".into(),
        success: 0.5,
        mean_reward: None,
        episodes: 4,
        published: vec![],
        by: None,
        subsets: Default::default(),
        repeats: None,
    };
    let cursor = Cursor { evals: vec![result.clone()], wall_s: 42.0, ..Default::default() };
    run.commit(None, &cursor, true).unwrap();
    let summary = Summary {
        status: "finished".into(),
        wall_s: 42.0,
        evals: vec![result],
        trajectories: 12,
        ..Default::default()
    };
    run.write_file("summary.json", &serde_json::to_vec_pretty(&summary).unwrap()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_shows_every_section_of_the_report_and_its_pages() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("run");
    run_dir(&root);
    let page_path = wrl_exec::report::write(&root).unwrap();
    // The report is whole without the run directory: move it away from `screens/`.
    let alone = dir.path().join("alone.html");
    std::fs::rename(&page_path, &alone).unwrap();

    let bin = wrl_browser::find_chromium(None).expect("Chromium (CI installs it)");
    let launched =
        wrl_browser::launch::launch(&bin, (1280, 900), 1.0, &[], None, Duration::from_secs(30))
            .await
            .unwrap();
    let (browser, mut handler) = (launched.browser, launched.handler);
    let _process = launched.process;
    tokio::spawn(async move { while handler.next().await.is_some() {} });
    let page = browser.new_page(format!("file://{}", alone.display())).await.unwrap();
    page.wait_for_navigation().await.unwrap();

    let facts: serde_json::Value = page
        .evaluate(
            "JSON.stringify({
               sections: [...document.querySelectorAll('section[id]')].map(s => s.id),
               charts: document.querySelectorAll('figure.chart svg').length,
               lines: document.querySelectorAll('figure.chart polyline').length,
               pages: [...document.querySelectorAll('.shot img')].map(i => [i.complete, i.naturalWidth, i.naturalHeight, Math.round(i.getBoundingClientRect().width)]),
               tags: [...document.querySelectorAll('.ep .tag')].map(t => t.textContent),
               config: document.querySelectorAll('#config details').length,
               title: document.querySelector('h1').textContent,
             })",
        )
        .await
        .unwrap()
        .into_value::<String>()
        .map(|s| serde_json::from_str(&s).unwrap())
        .unwrap();
    let sections: Vec<&str> =
        facts["sections"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    for id in [
        "status",
        "evals",
        "curves",
        "endings",
        "by-iteration",
        "by-template",
        "episodes",
        "config",
    ] {
        assert!(sections.contains(&id), "section {id} missing: {facts}");
    }
    assert!(facts["charts"].as_u64().unwrap() >= 8, "{facts}");
    assert!(facts["lines"].as_u64().unwrap() >= 8, "{facts}");
    let pages = facts["pages"].as_array().unwrap();
    assert!(!pages.is_empty(), "{facts}");
    for p in pages {
        // Decoded from the page itself (the files are not beside it), at the viewport's size,
        // shown as a thumbnail.
        assert_eq!(p, &serde_json::json!([true, 1280, 720, 320]), "{facts}");
    }
    let tags: Vec<&str> =
        facts["tags"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    for t in ["best", "worst", "agent_error", "wrong_answer"] {
        assert!(tags.contains(&t), "no {t} episode: {facts}");
    }
    assert_eq!(facts["config"], 1, "{facts}");
    assert_eq!(facts["title"], "wrl run — recipes/quickstart.wrl");

    // One click shows a page at full size over the report; another puts it back.
    let width = "Math.round(document.querySelector('.shot img').getBoundingClientRect().width)";
    page.evaluate("document.querySelector('.shot label').click()").await.unwrap();
    let full: u64 = page.evaluate(width).await.unwrap().into_value().unwrap();
    assert!(full > 1000, "full size is {full} px");
    page.evaluate("document.querySelector('.shot label').click()").await.unwrap();
    let thumb: u64 = page.evaluate(width).await.unwrap().into_value().unwrap();
    assert_eq!(thumb, 320);

    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report.png");
    page.save_screenshot(ScreenshotParams::builder().full_page(true).build(), &shot).await.unwrap();
    eprintln!("the report as Chromium drew it: {}", shot.display());
}
