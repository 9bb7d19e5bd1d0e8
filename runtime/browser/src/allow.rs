//! The navigation allow-list: which endpoints an episode's browser may reach. Enforced by the
//! pool's proxy (`proxy`), which every connection of the browser goes through, and reported
//! per frame by request interception (`intercept`).

use serde::{Deserialize, Serialize};

/// Scheme, host and port of a URL (default ports filled in).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// Lower-case scheme.
    pub scheme: String,
    /// Lower-case host (IPv6 without brackets).
    pub host: String,
    /// Port (explicit or the scheme's default).
    pub port: u16,
}

/// Parses the origin of `url`; `None` for URLs without an authority (`file:`, `data:`, …).
pub fn origin(url: &str) -> Option<Origin> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let auth = rest.split(['/', '?', '#']).next().unwrap_or("");
    let auth = auth.rsplit_once('@').map_or(auth, |(_, h)| h);
    let (host, port) = if let Some(v6) = auth.strip_prefix('[') {
        let (h, after) = v6.split_once(']')?;
        (h.to_string(), after.strip_prefix(':').map(str::to_string))
    } else {
        match auth.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p.to_string())),
            None => (auth.to_string(), None),
        }
    };
    let default = match scheme.as_str() {
        "http" | "ws" => 80,
        "https" | "wss" => 443,
        "ftp" => 21,
        _ => 0,
    };
    let port = match port {
        Some(p) if !p.is_empty() => p.parse().ok()?,
        _ => default,
    };
    if host.is_empty() {
        return None;
    }
    Some(Origin { scheme, host: host.to_ascii_lowercase(), port })
}

fn is_loopback(host: &str) -> bool {
    host == "localhost" || host.starts_with("127.") || host == "::1" || host == "0.0.0.0"
}

/// Which URLs may be requested. Serialized as a list of patterns.
///
/// A pattern is `host` (any port), `host:port`, `*.domain` (subdomains) or `*` (everything).
/// Whatever the patterns, `file:` URLs, non-web schemes and the runtime's control ports on
/// loopback are always blocked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllowList {
    /// Allowed patterns.
    pub patterns: Vec<String>,
    /// Loopback ports that are never allowed (CDP port, runtime control servers).
    pub control_ports: Vec<u16>,
    /// Endpoints that are never allowed on any host (a remote browser's DevTools), `host:port`.
    #[serde(default)]
    pub control_endpoints: Vec<(String, u16)>,
}

impl AllowList {
    /// Allows everything on the web (still blocks `file:` and control ports).
    pub fn any() -> AllowList {
        AllowList {
            patterns: vec!["*".into()],
            control_ports: Vec::new(),
            control_endpoints: Vec::new(),
        }
    }

    /// Allows exactly these patterns.
    pub fn only<S: Into<String>>(patterns: impl IntoIterator<Item = S>) -> AllowList {
        AllowList {
            patterns: patterns.into_iter().map(Into::into).collect(),
            control_ports: Vec::new(),
            control_endpoints: Vec::new(),
        }
    }

    /// Adds a pattern.
    pub fn allow(&mut self, pattern: impl Into<String>) -> &mut Self {
        self.patterns.push(pattern.into());
        self
    }

    /// Marks a loopback port as a control port (always blocked).
    pub fn block_control_port(&mut self, port: u16) -> &mut Self {
        if !self.control_ports.contains(&port) {
            self.control_ports.push(port);
        }
        self
    }

    /// Marks `host:port` as a control endpoint (always blocked; a remote browser's DevTools).
    pub fn block_control_endpoint(&mut self, host: &str, port: u16) -> &mut Self {
        let e = (host.to_ascii_lowercase(), port);
        if !self.control_endpoints.contains(&e) {
            self.control_endpoints.push(e);
        }
        self
    }

    /// `Ok(())` if a connection to the resolved address `addr` may be opened: not a control
    /// port on loopback (or the unspecified address, which reaches loopback) and not a control
    /// endpoint, whatever name led there.
    pub fn check_addr(&self, addr: &std::net::SocketAddr) -> Result<(), String> {
        let ip = addr.ip();
        let local = ip.is_loopback() || ip.is_unspecified();
        if local && self.control_ports.contains(&addr.port()) {
            return Err(format!("{addr} is a runtime control port"));
        }
        let host = ip.to_string();
        if self.control_endpoints.iter().any(|(h, p)| *h == host && *p == addr.port()) {
            return Err(format!("{addr} is a browser's DevTools endpoint"));
        }
        Ok(())
    }

    /// `Ok(())` if `url` may be requested, else why not.
    pub fn check(&self, url: &str) -> Result<(), String> {
        let lower = url.to_ascii_lowercase();
        if lower.starts_with("data:") || lower.starts_with("blob:") || lower.starts_with("about:") {
            return Ok(());
        }
        let Some(o) = origin(url) else {
            return Err("not a web URL".into());
        };
        if !matches!(o.scheme.as_str(), "http" | "https" | "ws" | "wss") {
            return Err(format!("scheme {}: is not allowed", o.scheme));
        }
        if is_loopback(&o.host) && self.control_ports.contains(&o.port) {
            return Err(format!("port {} is a runtime control port", o.port));
        }
        if self.control_endpoints.iter().any(|(h, p)| *h == o.host && *p == o.port) {
            return Err(format!("{}:{} is a browser's DevTools endpoint", o.host, o.port));
        }
        let ok = self.patterns.iter().any(|p| {
            let p = p.trim().to_ascii_lowercase();
            if p == "*" {
                return true;
            }
            let (ph, pp) = match p.rsplit_once(':') {
                Some((h, port)) if !h.is_empty() && port.chars().all(|c| c.is_ascii_digit()) => {
                    (h.to_string(), port.parse::<u16>().ok())
                }
                _ => (p.clone(), None),
            };
            let host_ok = match ph.strip_prefix("*.") {
                Some(dom) => o.host.ends_with(&format!(".{dom}")) || o.host == dom,
                None => o.host == ph,
            };
            host_ok && pp.is_none_or(|port| port == o.port)
        });
        if ok { Ok(()) } else { Err(format!("{}:{} is not in the allow-list", o.host, o.port)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_parse() {
        assert_eq!(origin("http://127.0.0.1:8080/x?y").unwrap().port, 8080);
        assert_eq!(
            origin("https://User@Example.com/").unwrap(),
            Origin { scheme: "https".into(), host: "example.com".into(), port: 443 }
        );
        assert_eq!(origin("http://[::1]:9/").unwrap().host, "::1");
        assert!(origin("file:///etc/passwd").is_none());
    }

    #[test]
    fn allow_list_blocks_other_hosts_ports_files_and_control_ports() {
        let mut a = AllowList::only(["127.0.0.1:4000", "*.example.org"]);
        a.block_control_port(9222);
        assert!(a.check("http://127.0.0.1:4000/shop/").is_ok());
        assert!(a.check("http://127.0.0.1:4001/").is_err());
        assert!(a.check("http://localhost:4000/").is_err());
        assert!(a.check("https://a.example.org/x").is_ok());
        assert!(a.check("https://example.com/").is_err());
        assert!(a.check("file:///etc/passwd").is_err());
        assert!(a.check("data:text/html,hi").is_ok());
        let mut any = AllowList::any();
        any.block_control_port(9222);
        assert!(any.check("http://example.com/").is_ok());
        assert!(any.check("http://127.0.0.1:9222/json").is_err());
        assert!(any.check("ftp://x/").is_err());
        // Whatever name led there, a resolved control port is refused.
        assert!(any.check_addr(&"127.0.0.1:9222".parse().unwrap()).is_err());
        assert!(any.check_addr(&"0.0.0.0:9222".parse().unwrap()).is_err());
        assert!(any.check_addr(&"127.0.0.1:9223".parse().unwrap()).is_ok());
        any.block_control_endpoint("10.0.0.5", 9222);
        assert!(any.check("ws://10.0.0.5:9222/devtools/browser/x").is_err());
        assert!(any.check_addr(&"10.0.0.5:9222".parse().unwrap()).is_err());
    }
}
