//! `wrlc env serve --script FILE`: the service started as usual, a list of requests sent to it
//! over loopback in order, their answers returned, then the service stopped. It shows a client's
//! view of each coded error (the UI cases and error pages of E061x use it) without a trainer.

use serde::Deserialize;
use serde_json::Value as Json;

use crate::{EnvServer, ServiceError};

/// One request of a script. `{episode}` in `path` is the id of the last episode created.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    pub method: String,
    pub path: String,
    #[serde(default)]
    pub body: Option<Json>,
    /// Send the service's token (default true); `false` sends none.
    #[serde(default = "yes")]
    pub token: bool,
}

fn yes() -> bool {
    true
}

/// What came back.
#[derive(Clone, Debug)]
pub struct Answer {
    pub method: String,
    pub path: String,
    pub status: u16,
    /// The error's code and message, for an error answer; a step whose turn could not be read
    /// (a 200 with `error`) counts as one too.
    pub error: Option<(String, String)>,
}

/// Reads a script: a JSON list of requests.
pub fn parse(text: &str) -> Result<Vec<Request>, String> {
    serde_json::from_str(text).map_err(|e| format!("not a list of requests: {e}"))
}

/// Serves `server` while `requests` are sent to it, then stops it.
pub async fn run(
    server: EnvServer,
    token: Option<String>,
    requests: &[Request],
) -> Result<Vec<Answer>, ServiceError> {
    let base = format!("http://{}", server.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run(async {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::new();
    let mut answers = Vec::new();
    let mut episode = String::new();
    for r in requests {
        let path = r.path.replace("{episode}", &episode);
        let url = format!("{base}{path}");
        let mut req = match r.method.as_str() {
            "GET" => http.get(url),
            _ => http.post(url),
        };
        if let (true, Some(t)) = (r.token, &token) {
            req = req.bearer_auth(t);
        }
        if let Some(b) = &r.body {
            req = req.json(b);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| ServiceError::Start(format!("{} {path}: {e}", r.method)))?;
        let status = resp.status().as_u16();
        let v: Json = resp.json().await.unwrap_or(Json::Null);
        if let Some(id) = v["episode"].as_str() {
            episode = id.to_string();
        }
        let err = &v["error"];
        let error = err["code"]
            .as_str()
            .map(|c| (c.to_string(), err["message"].as_str().unwrap_or("").to_string()));
        answers.push(Answer { method: r.method.clone(), path, status, error });
    }
    let _ = stop.send(());
    match serving.await {
        Ok(r) => r?,
        Err(e) => return Err(ServiceError::Start(format!("the service stopped: {e}"))),
    }
    Ok(answers)
}
