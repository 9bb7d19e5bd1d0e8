//! `wrlc serve` over a vision-language model (the tiny random Qwen3-VL `hf::tiny_vl` writes):
//! OpenAI `image_url` parts as data URLs, read by the checkpoint's own processor and written with
//! its own template as the agent loop writes a screenshot, answer what the trainer's own VL
//! sampling answers for the same conversation (greedy), whole and streamed, with one image or
//! several across messages; every image the server cannot read is refused with an OpenAI error.

#![allow(clippy::unwrap_used)] // test helpers fail loudly, like the tests they serve

use std::io::Cursor;
use std::path::Path;

use base64::Engine as _;
use serde_json::{Value as Json, json};
use wrl_serve::{ServeHandle, ServeOptions, Served, Server, load_policy, resolve_checkpoint};
use wrl_trainer::hf::tiny::{TinySpec, TokenizerSource};
use wrl_trainer::hf::tiny_vl::{TinyVision, write_vl};
use wrl_trainer::vision::IMAGE_PLACEHOLDER;
use wrl_trainer::{Role, SampleParams, Segment, Trainer, render_prompt_with};

const ASK: &str = "click the blue button";

fn tiny_vl(dir: &Path) {
    tiny_of(dir, &TinyVision::default());
}

/// The tiny random VL model of `vision`'s family (Qwen3-VL or Qwen2.5-VL) in `dir`.
fn tiny_of(dir: &Path, vision: &TinyVision) {
    let corpus = vec!["click the blue button then type the answer".to_string()];
    let tok = TokenizerSource::Generated { corpus, merges: 20 };
    write_vl(dir, &TinySpec::narrow(), vision, &tok).unwrap();
}

/// A `w` × `h` RGB image whose pixels depend on `seed`, encoded as `format`.
fn image(w: u32, h: u32, seed: u32, format: image::ImageFormat) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        image::Rgb([
            ((x * 7 + seed * 53) % 251) as u8,
            ((y * 11 + seed * 29) % 241) as u8,
            ((x * y + seed) % 239) as u8,
        ])
    });
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, format).unwrap();
    out.into_inner()
}

fn png(seed: u32) -> Vec<u8> {
    image(64, 48, seed, image::ImageFormat::Png)
}

fn data_url(media: &str, bytes: &[u8]) -> String {
    format!("data:{media};base64,{}", base64::engine::general_purpose::STANDARD.encode(bytes))
}

fn image_part(url: &str) -> Json {
    json!({"type": "image_url", "image_url": {"url": url}})
}

/// One user message: an image, then the question (the order the agent loop writes them in).
fn asked(url: &str) -> Json {
    json!([{"role": "user", "content": [image_part(url), {"type": "text", "text": ASK}]}])
}

async fn serve(trainer: Trainer) -> ServeHandle {
    let opts = ServeOptions {
        addr: "127.0.0.1:0".into(),
        model_name: "vl".into(),
        fixed_created: Some(1_700_000_000),
        ..ServeOptions::default()
    };
    Server::bind(trainer, &opts).await.unwrap().spawn()
}

async fn chat(base: &str, body: &Json) -> (u16, Json) {
    let resp =
        reqwest::Client::new().post(format!("{base}/chat/completions")).json(body).send().await;
    let resp = resp.unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap())
}

fn greedy(messages: Json) -> Json {
    json!({"model": "vl", "temperature": 0.0, "max_tokens": 5, "logprobs": true,
        "messages": messages})
}

/// What the trainer's own VL sampling answers (greedy, 5 tokens) for `segments` holding the
/// images `pngs`, as an agent's turn: rendered by the model's template, pads expanded, sampled
/// through the whole model. Returns the text and the prompt's length in tokens.
fn reference(trainer: &mut Trainer, segments: &[Segment], pngs: &[Vec<u8>]) -> (String, usize) {
    let mut sampler = trainer.sampler();
    let side = sampler.vision().unwrap().clone();
    let images: Vec<_> = pngs.iter().map(|b| side.read_image(b).unwrap()).collect();
    let ids = render_prompt_with(sampler.tokenizer(), segments, &[]).unwrap();
    let prompt = side.expand(&ids, &images).unwrap();
    let params = SampleParams { temperature: 0.0, max_tokens: 5, ..SampleParams::default() };
    let out = sampler.sample_images(&prompt, &images, &params).unwrap();
    (out[0].text.clone(), prompt.len())
}

fn user(text: String) -> Segment {
    Segment::new(Role::User, text)
}

fn logprobs(v: &Json) -> Vec<f64> {
    let content = v["choices"][0]["logprobs"]["content"].as_array().unwrap();
    content.iter().map(|t| t["logprob"].as_f64().unwrap()).collect()
}

/// A run's checkpoint of a VL policy: images answer as the trainer samples them, two different
/// images answer differently, the usage counts each image's tokens, two images across messages
/// answer whole and streamed alike.
#[tokio::test]
async fn a_vl_checkpoint_answers_image_parts_as_its_trainer_samples_them() {
    answers_image_parts(&TinyVision::default()).await;
}

/// The same of a Qwen2.5-VL policy (OpAgent's grounder's family: window attention, mRoPE in
/// sections, no DeepStack).
#[tokio::test]
async fn a_qwen25_vl_checkpoint_answers_image_parts_as_its_trainer_samples_them() {
    answers_image_parts(&TinyVision::qwen25()).await;
}

async fn answers_image_parts(vision: &TinyVision) {
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("VL-tiny");
    tiny_of(&model, vision);
    let mut own = load_policy(&model).unwrap();
    let ckpt = tmp.path().join("grpo-1");
    own.save(&ckpt).unwrap();
    let resolved = resolve_checkpoint(&ckpt).unwrap();
    assert_eq!(resolved.kind, Served::Checkpoint);
    let served = load_policy(&resolved.dir).unwrap();
    let family = served.model().vision().map(|s| s.config.family);
    assert_eq!(family, Some(vision.family), "the checkpoint keeps its vision side");
    let server = serve(served).await;
    let base = server.base_url();

    // One image: the trainer's own answer, its prompt counted with the image's tokens.
    let (a, b) = (png(1), png(2));
    let (status, v) = chat(&base, &greedy(asked(&data_url("image/png", &a)))).await;
    assert_eq!(status, 200, "{v}");
    let segs = [user(format!("{IMAGE_PLACEHOLDER}\n{ASK}"))];
    let (want, prompt_len) = reference(&mut own, &segs, std::slice::from_ref(&a));
    assert_eq!(v["choices"][0]["message"]["content"], json!(want), "{v}");
    assert_eq!(v["usage"]["prompt_tokens"], json!(prompt_len), "{v}");
    let side = own.model().vision().unwrap().clone();
    let pads = side.pads(&side.read_image(&a).unwrap());
    let text_only = render_prompt_with(own.tokenizer(), &segs, &[]).unwrap().len();
    assert!(pads > 1 && prompt_len == text_only - 1 + pads, "the image's {pads} tokens");

    // Another image: other log-probs (the image reaches the model).
    let (status, w) = chat(&base, &greedy(asked(&data_url("image/png", &b)))).await;
    assert_eq!(status, 200, "{w}");
    assert_ne!(logprobs(&v), logprobs(&w), "two images, one answer: {v} {w}");

    // A JPEG is read too.
    let jpeg = image(40, 40, 3, image::ImageFormat::Jpeg);
    let (status, j) = chat(&base, &greedy(asked(&data_url("image/jpeg", &jpeg)))).await;
    assert_eq!(status, 200, "{j}");

    // Two images across messages: whole = the trainer's answer = streamed.
    let messages = json!([
        {"role": "user", "content": [image_part(&data_url("image/png", &a)), {"type": "text", "text": ASK}]},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [{"type": "text", "text": "and now"}, image_part(&data_url("image/png", &b))]},
    ]);
    let (status, two) = chat(&base, &greedy(messages.clone())).await;
    assert_eq!(status, 200, "{two}");
    let segs = [
        user(format!("{IMAGE_PLACEHOLDER}\n{ASK}")),
        Segment::new(Role::Assistant, "ok"),
        user(format!("and now\n{IMAGE_PLACEHOLDER}")),
    ];
    let (want, prompt_len) = reference(&mut own, &segs, &[a.clone(), b.clone()]);
    assert_eq!(two["choices"][0]["message"]["content"], json!(want), "{two}");
    assert_eq!(two["usage"]["prompt_tokens"], json!(prompt_len), "{two}");
    let mut body = greedy(messages);
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    let text = reqwest::Client::new()
        .post(format!("{base}/chat/completions"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let chunks: Vec<Json> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let streamed: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect::<Vec<_>>()
        .concat();
    assert_eq!(json!(streamed), json!(want), "{text}");
    let usage = chunks.iter().rev().find(|c| !c["usage"].is_null()).unwrap();
    assert_eq!(usage["usage"]["prompt_tokens"], json!(prompt_len), "{text}");
    server.stop().await.unwrap();
}

/// Patches a PNG's IHDR width and height (and its CRC): a header that says any size.
fn png_of_size(w: u32, h: u32) -> Vec<u8> {
    let mut bytes = png(0);
    // Signature (8), length (4), "IHDR" (4), then width and height.
    bytes[16..20].copy_from_slice(&w.to_be_bytes());
    bytes[20..24].copy_from_slice(&h.to_be_bytes());
    let crc = crc32(&bytes[12..29]);
    bytes[29..33].copy_from_slice(&crc.to_be_bytes());
    bytes
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// A plain Hugging Face Qwen3-VL directory is served; what it cannot read is refused, each an
/// OpenAI error naming the part at fault: never fetched, never a panic. A text model refuses
/// every image.
#[tokio::test]
async fn images_the_server_cannot_read_are_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("Qwen3-VL-tiny");
    tiny_vl(&model);
    let resolved = resolve_checkpoint(&model).unwrap();
    assert_eq!(resolved.kind, Served::BaseModel);
    let server = serve(load_policy(&resolved.dir).unwrap()).await;
    let base = server.base_url();
    let url = "messages[0].content[0].image_url.url";
    let hello = base64::engine::general_purpose::STANDARD.encode(b"hello, not an image");
    let wide = image(300, 1, 0, image::ImageFormat::Png);
    for (url_sent, code, says) in [
        ("https://example.com/cat.png".to_string(), "invalid_image_url", "not fetched"),
        ("data:image/png,abc".into(), "invalid_image_url", "not base64"),
        ("data:image/png;base64,%%%".into(), "invalid_image_url", "does not decode"),
        ("data:image/webp;base64,AAAA".into(), "invalid_image_url", "PNG or JPEG"),
        (format!("data:image/png;base64,{hello}"), "invalid_image", "not a PNG or JPEG"),
        (data_url("image/png", &png_of_size(0, 48)), "invalid_image", "zero size"),
        (data_url("image/png", &png_of_size(5000, 5000)), "invalid_image", "at most 16777216"),
        (data_url("image/png", &wide), "invalid_image", "aspect ratio"),
    ] {
        let (status, v) = chat(&base, &greedy(asked(&url_sent))).await;
        assert_eq!(status, 400, "{url_sent:.60}: {v}");
        assert_eq!(v["error"]["code"], code, "{url_sent:.60}: {v}");
        assert_eq!(v["error"]["param"], url, "{url_sent:.60}: {v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{url_sent:.60}: {message}");
    }
    let ok = data_url("image/png", &png(1));
    let part = |p: Json| json!([{"role": "user", "content": [p]}]);
    for (messages, param, says) in [
        (
            part(json!({"type": "image_url", "image_url": {"url": ok, "detail": "high"}})),
            "messages[0].content[0].image_url.detail",
            "not honoured",
        ),
        (
            part(json!({"type": "input_audio", "input_audio": {}})),
            "messages[0].content[0].type",
            "`input_audio`",
        ),
        (
            json!([{"role": "assistant", "content": [image_part(&ok)]}]),
            "messages[0].content[0].type",
            "belong to `user` messages",
        ),
        (
            json!([{"role": "user", "content": format!("{IMAGE_PLACEHOLDER} look")}]),
            "messages",
            "placeholder",
        ),
    ] {
        let (status, v) = chat(&base, &greedy(messages)).await;
        assert_eq!(status, 400, "{v}");
        assert_eq!(v["error"]["param"], param, "{v}");
        assert!(v["error"]["message"].as_str().unwrap().contains(says), "{v}");
    }
    // `detail: auto` is what the processor does anyway.
    let auto = part(json!({"type": "image_url", "image_url": {"url": ok, "detail": "auto"}}));
    assert_eq!(chat(&base, &greedy(auto)).await.0, 200);
    server.stop().await.unwrap();

    // A text model reads text only.
    let text_model = tmp.path().join("Qwen3-tiny");
    let tok = TokenizerSource::Generated { corpus: vec![ASK.into()], merges: 10 };
    wrl_trainer::hf::tiny::write(&text_model, &TinySpec::narrow(), &tok).unwrap();
    let server = serve(load_policy(&text_model).unwrap()).await;
    let (status, v) = chat(&server.base_url(), &greedy(asked(&ok))).await;
    assert_eq!(status, 400, "{v}");
    assert_eq!(v["error"]["param"], "messages[0].content[0].type", "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("reads text only"), "{v}");
    server.stop().await.unwrap();
}
