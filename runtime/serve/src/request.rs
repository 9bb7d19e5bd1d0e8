//! Request bodies of `/v1/chat/completions` and `/v1/completions`, validated field by field: every
//! field is either honoured or refused with its name in `param` (as OpenAI refuses an unknown
//! argument), so a client never gets an answer that silently ignored what it asked for; and
//! held to its share of samples and answer (`share`).

use serde_json::{Map, Value as Json};
use wrl_trainer::{Role, SampleParams, Segment};

use crate::error::ApiError;
use crate::images::{self, ImagePart};
use crate::share::held_to_share;
use crate::tools::{self, Offered};

/// Most completions one request may ask for, per prompt.
const MAX_N: u64 = 64;
/// Most alternatives per token: OpenAI's limits (chat 20, completions 5).
const MAX_TOP_CHAT: u64 = 20;
const MAX_TOP_TEXT: u64 = 5;

/// Which endpoint a request came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Chat,
    Completions,
}

/// What to complete.
#[derive(Debug)]
pub(crate) enum Input {
    /// A conversation, rendered with the policy's chat format, and the images its placeholders
    /// stand for, in order (a vision-language model's).
    Chat(Vec<Segment>, Vec<ImagePart>),
    /// Raw prompts: text (tokenized as is) or token ids.
    Text(Vec<PromptText>),
}

/// One prompt of `/v1/completions`.
#[derive(Debug)]
pub(crate) enum PromptText {
    Text(String),
    Tokens(Vec<u32>),
}

/// A validated request of either endpoint.
#[derive(Debug)]
pub(crate) struct GenRequest {
    pub(crate) input: Input,
    pub(crate) params: SampleParams,
    pub(crate) seed: Option<u64>,
    pub(crate) stream: bool,
    /// `stream_options.include_usage`: a last chunk with the usage.
    pub(crate) include_usage: bool,
    /// `None`: no log-probs; `Some(k)`: the chosen token's and the `k` most likely ones.
    pub(crate) logprobs: Option<usize>,
    /// `/v1/completions` `echo`: the prompt text comes first in the answer.
    pub(crate) echo: bool,
    /// The tools a chat request offers a policy with a chat template (`tools.rs`).
    pub(crate) tools: Offered,
}

type Obj = Map<String, Json>;

fn field<'a>(obj: &'a Obj, k: &str) -> Option<&'a Json> {
    obj.get(k).filter(|x| !x.is_null())
}

fn number(obj: &Obj, k: &str, lo: f64, hi: f64) -> Result<Option<f64>, ApiError> {
    let Some(x) = field(obj, k) else { return Ok(None) };
    let f = x
        .as_f64()
        .ok_or_else(|| ApiError::invalid("invalid_type", k, format!("`{k}` must be a number")))?;
    if !(lo..=hi).contains(&f) {
        return Err(ApiError::invalid(
            "invalid_value",
            k,
            format!("`{k}` must be between {lo} and {hi}, not {f}"),
        ));
    }
    Ok(Some(f))
}

fn integer(obj: &Obj, k: &str, lo: u64, hi: u64) -> Result<Option<u64>, ApiError> {
    let Some(x) = field(obj, k) else { return Ok(None) };
    x.as_u64().filter(|n| (lo..=hi).contains(n)).map(Some).ok_or_else(|| {
        ApiError::invalid(
            "invalid_value",
            k,
            format!("`{k}` must be an integer between {lo} and {hi}"),
        )
    })
}

fn boolean(obj: &Obj, k: &str) -> Result<Option<bool>, ApiError> {
    match field(obj, k) {
        None => Ok(None),
        Some(x) => x.as_bool().map(Some).ok_or_else(|| {
            ApiError::invalid("invalid_type", k, format!("`{k}` must be a boolean"))
        }),
    }
}

fn unsupported(k: &str, why: &str) -> ApiError {
    ApiError::invalid("unsupported_parameter", k, format!("`{k}` is not supported: {why}"))
}

/// Fields that change nothing in the answer of a local policy (identifiers and hints).
const INERT: &[&str] = &["user", "metadata", "service_tier", "parallel_tool_calls"];
const CHAT_FIELDS: &[&str] = &[
    "model",
    "messages",
    "stream",
    "stream_options",
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "stop",
    "n",
    "seed",
    "logprobs",
    "top_logprobs",
    "tools",
    "tool_choice",
    "functions",
    "function_call",
    "response_format",
    "frequency_penalty",
    "presence_penalty",
    "logit_bias",
    "store",
    "modalities",
];
const TEXT_FIELDS: &[&str] = &[
    "model",
    "prompt",
    "stream",
    "stream_options",
    "temperature",
    "top_p",
    "max_tokens",
    "stop",
    "n",
    "seed",
    "logprobs",
    "echo",
    "suffix",
    "best_of",
    "frequency_penalty",
    "presence_penalty",
    "logit_bias",
];

/// Parses and validates a request body for `endpoint`; `templated`: the policy renders chats
/// with its own chat template, so a chat request may offer tools; `sees`: the policy reads
/// images, so a chat message may hold `image_url` parts (`images`). Fields are judged in a fixed
/// order, so a body with several mistakes is always refused for the same one.
pub(crate) fn parse(
    body: &[u8],
    endpoint: Endpoint,
    served: &str,
    context: usize,
    templated: bool,
    sees: bool,
) -> Result<GenRequest, ApiError> {
    let v: Json = serde_json::from_slice(body).map_err(|e| {
        ApiError::body("invalid_json", format!("the request body is not valid JSON: {e}"))
    })?;
    let obj = v.as_object().ok_or_else(|| {
        ApiError::body("invalid_request", "the request body must be a JSON object")
    })?;
    known_fields(obj, endpoint)?;
    served_model(obj, served)?;
    let with_tools = templated && endpoint == Endpoint::Chat;
    refuse_unhonoured(obj, with_tools)?;
    let offered = if with_tools { tools::offered(body, obj)? } else { Offered::default() };
    let stream = boolean(obj, "stream")?.unwrap_or(false);
    if stream && offered.parse_reply {
        return Err(unsupported(
            "stream",
            "tool calls are read from the whole reply; ask with `tools` without `stream`",
        ));
    }
    let include_usage = include_usage(obj, stream)?;
    let (input, logprobs, echo) = match endpoint {
        Endpoint::Chat => chat_input(obj, templated, sees)?,
        Endpoint::Completions => text_input(obj)?,
    };
    let (mut params, explicit) = sampling(obj, endpoint, context)?;
    let prompts = match &input {
        Input::Chat(..) => 1,
        Input::Text(p) => p.len(),
    };
    held_to_share(&mut params, prompts, logprobs, explicit)?;
    if stream && params.n > 1 && endpoint == Endpoint::Completions && echo {
        return Err(unsupported("echo", "`echo` cannot be combined with `stream` and `n` > 1"));
    }
    let seed = match field(obj, "seed") {
        None => None,
        Some(x) => Some(x.as_u64().or_else(|| x.as_i64().map(|i| i as u64)).ok_or_else(|| {
            ApiError::invalid("invalid_type", "seed", "`seed` must be an integer")
        })?),
    };
    params.stop = parse_stop(obj)?;
    Ok(GenRequest { input, params, seed, stream, include_usage, logprobs, echo, tools: offered })
}

/// Refuses the first field (in name order) that `endpoint` does not know and that is not inert.
fn known_fields(obj: &Obj, endpoint: Endpoint) -> Result<(), ApiError> {
    let known = match endpoint {
        Endpoint::Chat => CHAT_FIELDS,
        Endpoint::Completions => TEXT_FIELDS,
    };
    // Sorted, so the first unknown field reported is the same every time.
    let mut keys: Vec<&String> = obj.keys().collect();
    keys.sort();
    if let Some(k) =
        keys.iter().find(|k| !known.contains(&k.as_str()) && !INERT.contains(&k.as_str()))
    {
        return Err(ApiError::invalid(
            "unknown_parameter",
            k.as_str(),
            format!("unrecognized request argument supplied: `{k}`"),
        ));
    }
    Ok(())
}

/// `model`, when given, must name the policy served.
fn served_model(obj: &Obj, served: &str) -> Result<(), ApiError> {
    if let Some(m) = field(obj, "model") {
        let m = m.as_str().ok_or_else(|| {
            ApiError::invalid("invalid_type", "model", "`model` must be a string")
        })?;
        if m != served {
            return Err(ApiError::model_not_found(m, served));
        }
    }
    Ok(())
}

/// `stream_options.include_usage`: allowed only when streaming, and the only option known.
fn include_usage(obj: &Obj, stream: bool) -> Result<bool, ApiError> {
    let Some(o) = field(obj, "stream_options") else { return Ok(false) };
    if !stream {
        return Err(ApiError::invalid(
            "invalid_value",
            "stream_options",
            "`stream_options` is only allowed with `stream: true`",
        ));
    }
    let o = o.as_object().ok_or_else(|| {
        ApiError::invalid("invalid_type", "stream_options", "`stream_options` must be an object")
    })?;
    if let Some(k) = o.keys().find(|k| k.as_str() != "include_usage") {
        return Err(ApiError::invalid(
            "unknown_parameter",
            format!("stream_options.{k}"),
            format!("unrecognized argument `stream_options.{k}`; only `include_usage` is known"),
        ));
    }
    Ok(boolean(o, "include_usage")
        .map_err(|e| ApiError { param: Some("stream_options.include_usage".into()), ..e })?
        .unwrap_or(false))
}

/// A chat request's messages and log-probs (`logprobs`, then `top_logprobs` alternatives).
fn chat_input(
    obj: &Obj,
    templated: bool,
    sees: bool,
) -> Result<(Input, Option<usize>, bool), ApiError> {
    let logprobs = boolean(obj, "logprobs")?.unwrap_or(false);
    let top = integer(obj, "top_logprobs", 0, MAX_TOP_CHAT)?;
    if top.is_some() && !logprobs {
        return Err(ApiError::invalid(
            "invalid_value",
            "top_logprobs",
            "`top_logprobs` needs `logprobs: true`",
        ));
    }
    let lp = logprobs.then(|| top.unwrap_or(0) as usize);
    let (segments, images) = parse_messages(obj, templated, sees)?;
    Ok((Input::Chat(segments, images), lp, false))
}

/// A completions request's prompts, log-probs and `echo` (a `suffix` is refused: text is
/// completed left to right only).
fn text_input(obj: &Obj) -> Result<(Input, Option<usize>, bool), ApiError> {
    if field(obj, "suffix").and_then(Json::as_str).is_some_and(|s| !s.is_empty()) {
        return Err(unsupported("suffix", "this policy completes text left to right only"));
    }
    let lp = integer(obj, "logprobs", 0, MAX_TOP_TEXT)?.map(|k| k as usize);
    let echo = boolean(obj, "echo")?.unwrap_or(false);
    if echo && lp.is_some() {
        return Err(unsupported(
            "echo",
            "`echo` with `logprobs` would need the prompt's log-probs; ask without `echo`",
        ));
    }
    Ok((Input::Text(parse_prompts(obj)?), lp, echo))
}

/// How to sample: temperature, nucleus, the token cap (OpenAI's defaults: the rest of the
/// `context` for chat, 16 tokens for completions) and `n` completions (`best_of` only as `n`);
/// whether the cap was asked for. Stop sequences are read apart.
fn sampling(
    obj: &Obj,
    endpoint: Endpoint,
    context: usize,
) -> Result<(SampleParams, bool), ApiError> {
    let temperature = number(obj, "temperature", 0.0, 2.0)?.unwrap_or(1.0) as f32;
    let top_p = number(obj, "top_p", 0.0, 1.0)?.unwrap_or(1.0) as f32;
    if top_p <= 0.0 {
        return Err(ApiError::invalid("invalid_value", "top_p", "`top_p` must be greater than 0"));
    }
    let max_tokens = match integer(obj, "max_completion_tokens", 1, u64::MAX)? {
        Some(n) => Some(n),
        None => integer(obj, "max_tokens", 1, u64::MAX)?,
    };
    let explicit = max_tokens.is_some();
    // OpenAI's completions default to 16 tokens; chat to the rest of the context.
    let max_tokens = match (max_tokens, endpoint) {
        (Some(m), _) => usize::try_from(m).unwrap_or(usize::MAX),
        (None, Endpoint::Chat) => context,
        (None, Endpoint::Completions) => 16,
    };
    let n = integer(obj, "n", 1, MAX_N)?.unwrap_or(1) as usize;
    if let Some(b) = integer(obj, "best_of", 1, MAX_N)?
        && b as usize != n
    {
        return Err(unsupported(
            "best_of",
            "completions are not ranked on the server; ask for `n` and rank them yourself",
        ));
    }
    let params =
        SampleParams { temperature, top_p, top_k: 0, max_tokens, n, ..SampleParams::default() };
    Ok((params, explicit))
}

/// Fields with a value this server cannot honour: tools (but `with_tools`: a chat template's,
/// read by `tools.rs`), legacy functions, structured output, penalties, biases.
fn refuse_unhonoured(obj: &Obj, with_tools: bool) -> Result<(), ApiError> {
    let offered: &[&str] = if with_tools { &["functions"] } else { &["tools", "functions"] };
    for &k in offered {
        if let Some(t) = field(obj, k)
            && t.as_array().is_none_or(|a| !a.is_empty())
        {
            return Err(ApiError::invalid(
                "tools_not_supported",
                k,
                format!(
                    "`{k}` is not supported: {}",
                    if with_tools {
                        "send the functions as `tools`"
                    } else {
                        "this policy has no chat template with a tool format, so it cannot \
                         answer with `tool_calls`; describe the tools in the messages instead"
                    }
                ),
            ));
        }
    }
    let choices: &[&str] =
        if with_tools { &["function_call"] } else { &["tool_choice", "function_call"] };
    for &k in choices {
        match field(obj, k) {
            None => {}
            Some(Json::String(s)) if s == "none" => {}
            Some(_) => {
                return Err(ApiError::invalid(
                    "tools_not_supported",
                    k,
                    format!(
                        "`{k}` is not supported: this policy cannot call tools; omit it or send \"none\""
                    ),
                ));
            }
        }
    }
    if let Some(rf) = field(obj, "response_format") {
        match rf.get("type").and_then(Json::as_str) {
            Some("text") => {}
            Some(other) => {
                return Err(ApiError::invalid(
                    "response_format_not_supported",
                    "response_format.type",
                    format!(
                        "`response_format` `{other}` is not supported: the policy's output is not \
                         constrained to JSON; omit it or send {{\"type\": \"text\"}}"
                    ),
                ));
            }
            None => {
                return Err(ApiError::invalid(
                    "invalid_value",
                    "response_format.type",
                    "`response_format.type` is required",
                ));
            }
        }
    }
    for k in ["frequency_penalty", "presence_penalty"] {
        if let Some(x) = number(obj, k, -2.0, 2.0)?
            && x != 0.0
        {
            return Err(unsupported(k, "this server samples without penalties; send 0 or omit it"));
        }
    }
    if let Some(b) = field(obj, "logit_bias")
        && b.as_object().is_none_or(|m| !m.is_empty())
    {
        return Err(unsupported("logit_bias", "this server samples without biases; omit it"));
    }
    if boolean(obj, "store")? == Some(true) {
        return Err(unsupported("store", "this server keeps no completions"));
    }
    if let Some(m) = field(obj, "modalities")
        && m.as_array().is_none_or(|a| a.iter().any(|x| x.as_str() != Some("text")))
    {
        return Err(unsupported("modalities", "this policy answers with text only"));
    }
    Ok(())
}

fn parse_stop(obj: &Obj) -> Result<Vec<String>, ApiError> {
    let bad = || {
        ApiError::invalid("invalid_type", "stop", "`stop` must be a string or a list of strings")
    };
    let stop = match field(obj, "stop") {
        None => Vec::new(),
        Some(Json::String(s)) => vec![s.clone()],
        Some(Json::Array(a)) => a
            .iter()
            .map(|x| x.as_str().map(str::to_string).ok_or_else(bad))
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err(bad()),
    };
    Ok(stop.into_iter().filter(|s| !s.is_empty()).collect())
}

fn parse_prompts(obj: &Obj) -> Result<Vec<PromptText>, ApiError> {
    let missing =
        || ApiError::invalid("missing_required_parameter", "prompt", "`prompt` is required");
    let bad = || {
        ApiError::invalid(
            "invalid_type",
            "prompt",
            "`prompt` must be a string, a list of strings, a list of token ids or a list of lists of token ids",
        )
    };
    let tokens = |a: &[Json]| -> Option<Vec<u32>> {
        a.iter().map(|x| x.as_u64().and_then(|t| u32::try_from(t).ok())).collect()
    };
    let prompts = match field(obj, "prompt").ok_or_else(missing)? {
        Json::String(s) => vec![PromptText::Text(s.clone())],
        Json::Array(a) if a.is_empty() => return Err(bad()),
        Json::Array(a) if a.iter().all(Json::is_string) => {
            a.iter().filter_map(|x| x.as_str().map(|s| PromptText::Text(s.to_string()))).collect()
        }
        Json::Array(a) if a.iter().all(Json::is_number) => {
            vec![PromptText::Tokens(tokens(a).ok_or_else(bad)?)]
        }
        Json::Array(a) => a
            .iter()
            .map(|x| {
                x.as_array()
                    .and_then(|t| tokens(t.as_slice()))
                    .map(PromptText::Tokens)
                    .ok_or_else(bad)
            })
            .collect::<Result<Vec<_>, _>>()?,
        _ => return Err(bad()),
    };
    Ok(prompts)
}

/// The messages as segments, each image part written as the model's placeholder, and the image
/// parts in the order their placeholders stand.
fn parse_messages(
    obj: &Obj,
    templated: bool,
    sees: bool,
) -> Result<(Vec<Segment>, Vec<ImagePart>), ApiError> {
    let messages = field(obj, "messages")
        .ok_or_else(|| {
            ApiError::invalid("missing_required_parameter", "messages", "`messages` is required")
        })?
        .as_array()
        .ok_or_else(|| {
            ApiError::invalid("invalid_type", "messages", "`messages` must be an array")
        })?;
    if messages.is_empty() {
        return Err(ApiError::invalid("invalid_value", "messages", "`messages` must not be empty"));
    }
    let mut segments = Vec::with_capacity(messages.len());
    let mut images = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let (segment, more) = parse_message(i, m, templated, sees)?;
        segments.push(segment);
        images.extend(more);
    }
    Ok((segments, images))
}

fn parse_message(
    i: usize,
    m: &Json,
    templated: bool,
    sees: bool,
) -> Result<(Segment, Vec<ImagePart>), ApiError> {
    let at = |k: &str| format!("messages[{i}].{k}");
    let role = m.get("role").and_then(Json::as_str).ok_or_else(|| {
        ApiError::invalid("invalid_value", at("role"), format!("`{}` is required", at("role")))
    })?;
    let role = match role {
        "system" | "developer" => Role::System,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        other => {
            return Err(ApiError::invalid(
                "invalid_value",
                at("role"),
                format!(
                    "`{}` is `{other}`; expected `system`, `user`, `assistant` or `tool`",
                    at("role")
                ),
            ));
        }
    };
    let calls = match m.get("tool_calls").filter(|t| !t.is_null()) {
        None => Vec::new(),
        Some(c) if templated && role == Role::Assistant => tools::message_calls(i, c)?,
        Some(_) => {
            return Err(ApiError::invalid(
                "tools_not_supported",
                at("tool_calls"),
                if templated {
                    "`tool_calls` belong to assistant messages"
                } else {
                    "`tool_calls` in a message are not supported: this policy has no chat template with a tool format"
                },
            ));
        }
    };
    let (text, images) = match m.get("content") {
        None | Some(Json::Null) => (String::new(), Vec::new()),
        Some(Json::String(s)) => (s.clone(), Vec::new()),
        Some(Json::Array(parts)) => images::content_parts(i, parts, role, sees)?,
        Some(_) => {
            return Err(ApiError::invalid(
                "invalid_type",
                at("content"),
                format!("`{}` must be a string or a list of parts", at("content")),
            ));
        }
    };
    Ok((Segment { tool_calls: calls, ..Segment::new(role, text) }, images))
}
