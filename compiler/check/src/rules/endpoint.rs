//! A reward endpoint (`std::rewards::endpoint`) that could never be called or read: a `url` that
//! is not an `http://` or `https://` URL with a host (E0314, with did-you-mean on a misspelt
//! scheme), and `components` that cannot be told apart in an answer or in the metrics — an
//! empty name, one with characters a metric name does not take, or a name given twice (E0315).
//! Both would otherwise fail every call of a run, each episode excluded, hours in.

use std::collections::BTreeSet;

use wrl_diagnostics::Diagnostic;

use super::Ctx;
use super::answers::walk;
use crate::value::{Obj, V};

pub(super) fn check(ctx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    let mut seen = BTreeSet::new();
    for d in ctx.recipe.decls.iter().filter(|d| !d.std) {
        walk(
            &d.value,
            &mut |o| {
                if o.ctor.rsplit("::").next() == Some("endpoint") && o.kind == "signal" {
                    endpoint(o, &mut seen, out);
                }
            },
            0,
        );
    }
}

fn endpoint(o: &Obj, seen: &mut BTreeSet<(u32, u32)>, out: &mut Vec<Diagnostic>) {
    if let Some(at) = o.fields.get("url")
        && let V::Str { value: url } = &at.v
        && let Err((why, help)) = http_url(url)
        && seen.insert((at.span.start, at.span.end))
    {
        out.push(
            Diagnostic::new(
                "E0314",
                format!("the reward endpoint `{url}` is not an HTTP URL: {why}"),
            )
            .label(at.span, "not an `http://` or `https://` URL with a host")
            .help(help),
        );
    }
    let Some(V::List { items }) = o.fields.get("components").map(|c| &c.v) else { return };
    let mut names = BTreeSet::new();
    for item in items {
        let V::Str { value: name } = &item.v else { continue };
        let problem = if name.is_empty() {
            Some(("an empty name", "name it: the answer's `components` key and the metric's name"))
        } else if !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')) {
            Some((
                "letters, digits, `_`, `-` and `.` only",
                "a component's name is a JSON key of the answer and a metric's name: \
                 `components = [\"answer\", \"format\"]`",
            ))
        } else if !names.insert(name.as_str()) {
            Some(("given twice", "list each component once"))
        } else {
            None
        };
        if let Some((label, help)) = problem
            && seen.insert((item.span.start, item.span.end))
        {
            out.push(
                Diagnostic::new(
                    "E0315",
                    format!("the reward endpoint's component `{name}` cannot be told apart"),
                )
                .label(item.span, label)
                .help(help),
            );
        }
    }
}

/// Whether `url` is `http://HOST[:PORT][/PATH]` or `https://…`: why not, and the fix.
fn http_url(url: &str) -> Result<(), (String, String)> {
    let example = "write it as `http://127.0.0.1:9000/score` or `https://HOST/PATH`";
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(("it has no scheme".into(), example.into()));
    };
    if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") {
        // The whole URL with the scheme it most likely meant (the editor's quick fix writes it).
        let help = wrl_diagnostics::suggest(&scheme.to_ascii_lowercase(), ["http", "https"])
            .map(|s| format!("did you mean `{s}://{rest}`?"))
            .unwrap_or_else(|| format!("a reward endpoint is called over HTTP: {example}"));
        return Err((format!("the scheme `{scheme}` is not `http` or `https`"), help));
    }
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    // A user and password before the host is the preflight's (E0520: a credential in a URL).
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = match host_port.strip_prefix('[') {
        // An IPv6 address: `[::1]:9000`.
        Some(v6) => match v6.split_once(']') {
            Some((h, rest)) => (h, rest.strip_prefix(':')),
            None => ("", None),
        },
        None => match host_port.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (host_port, None),
        },
    };
    if host.is_empty() {
        return Err(("it has no host".into(), example.into()));
    }
    if let Some(p) = port
        && p.parse::<u16>().map_or(true, |p| p == 0)
    {
        return Err((format!("the port `{p}` is not a port (1 to 65535)"), example.into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::http_url;

    #[test]
    fn urls() {
        for ok in [
            "http://127.0.0.1:9000/score",
            "https://h/x?y=1",
            "http://[::1]:80/",
            "http://[::1]/",
            "HTTP://h",
        ] {
            assert!(http_url(ok).is_ok(), "{ok}");
        }
        for bad in [
            "127.0.0.1:9000/score",
            "htp://h/",
            "ftp://h/",
            "http:///score",
            "http://h:99999/",
            "http://h:x/",
        ] {
            assert!(http_url(bad).is_err(), "{bad}");
        }
        let Err((_, help)) = http_url("htps://h/") else { panic!() };
        assert_eq!(help, "did you mean `https://h/`?");
    }
}
