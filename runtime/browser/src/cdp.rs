//! Thin CDP helpers used by episodes: evaluate, mouse, keys, text input, screenshots.

use base64::Engine;
use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchKeyEventParams, DispatchKeyEventType, DispatchMouseEventParams, DispatchMouseEventType,
    InsertTextParams, MouseButton as CdpButton,
};
use chromiumoxide::cdp::browser_protocol::page::{
    CaptureScreenshotFormat, CaptureScreenshotParams,
};
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use chromiumoxide::error::CdpError;

use crate::action::MouseButton;
use crate::keys::KeyDef;

/// A CDP failure, as text.
pub type CdpResult<T> = Result<T, String>;

fn err(e: CdpError) -> String {
    e.to_string()
}

/// Evaluates `expr` in the page's main frame and returns the result as JSON.
pub async fn eval(page: &Page, expr: &str) -> CdpResult<serde_json::Value> {
    evaluate(page, expr, false).await
}

/// Evaluates `expr`, a promise, and returns what it resolves to as JSON.
pub async fn eval_awaited(page: &Page, expr: &str) -> CdpResult<serde_json::Value> {
    evaluate(page, expr, true).await
}

async fn evaluate(page: &Page, expr: &str, await_promise: bool) -> CdpResult<serde_json::Value> {
    let params = EvaluateParams::builder()
        .expression(expr)
        .return_by_value(true)
        .await_promise(await_promise)
        .build()
        .map_err(|e| e.to_string())?;
    let res = page.execute(params).await.map_err(err)?;
    if let Some(ex) = &res.result.exception_details {
        return Err(format!("script error: {}", ex.text));
    }
    Ok(res.result.result.value.clone().unwrap_or(serde_json::Value::Null))
}

/// Evaluates `expr` and returns its string result (`""` for non-strings).
pub async fn eval_string(page: &Page, expr: &str) -> CdpResult<String> {
    Ok(match eval(page, expr).await? {
        serde_json::Value::String(s) => s,
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    })
}

fn cdp_button(b: MouseButton) -> CdpButton {
    match b {
        MouseButton::Left => CdpButton::Left,
        MouseButton::Right => CdpButton::Right,
        MouseButton::Middle => CdpButton::Middle,
    }
}

async fn mouse(
    page: &Page,
    ty: DispatchMouseEventType,
    x: f64,
    y: f64,
    button: Option<MouseButton>,
    count: i64,
) -> CdpResult<()> {
    let mut b = DispatchMouseEventParams::builder().r#type(ty).x(x).y(y);
    if let Some(btn) = button {
        b = b.button(cdp_button(btn)).click_count(count);
        b = b.buttons(match btn {
            MouseButton::Left => 1,
            MouseButton::Right => 2,
            MouseButton::Middle => 4,
        });
    }
    page.execute(b.build()?).await.map_err(err)?;
    Ok(())
}

/// Moves the mouse to (x, y).
pub async fn mouse_move(page: &Page, x: f64, y: f64) -> CdpResult<()> {
    mouse(page, DispatchMouseEventType::MouseMoved, x, y, None, 0).await
}

/// Clicks `clicks` times at (x, y).
pub async fn click(page: &Page, x: f64, y: f64, button: MouseButton, clicks: u32) -> CdpResult<()> {
    mouse_move(page, x, y).await?;
    for n in 1..=i64::from(clicks.clamp(1, 3)) {
        mouse(page, DispatchMouseEventType::MousePressed, x, y, Some(button), n).await?;
        mouse(page, DispatchMouseEventType::MouseReleased, x, y, Some(button), n).await?;
    }
    Ok(())
}

/// Presses at `from`, moves in `steps`, releases at `to`.
pub async fn drag(page: &Page, from: (f64, f64), to: (f64, f64), steps: u32) -> CdpResult<()> {
    mouse_move(page, from.0, from.1).await?;
    mouse(page, DispatchMouseEventType::MousePressed, from.0, from.1, Some(MouseButton::Left), 1)
        .await?;
    let steps = steps.clamp(1, 100);
    for i in 1..=steps {
        let t = f64::from(i) / f64::from(steps);
        let (x, y) = (from.0 + (to.0 - from.0) * t, from.1 + (to.1 - from.1) * t);
        let p = DispatchMouseEventParams::builder()
            .r#type(DispatchMouseEventType::MouseMoved)
            .x(x)
            .y(y)
            .button(CdpButton::Left)
            .buttons(1)
            .build()?;
        page.execute(p).await.map_err(err)?;
    }
    mouse(page, DispatchMouseEventType::MouseReleased, to.0, to.1, Some(MouseButton::Left), 1).await
}

async fn key_event(
    page: &Page,
    ty: DispatchKeyEventType,
    k: &KeyDef,
    modifiers: i64,
) -> CdpResult<()> {
    let mut b = DispatchKeyEventParams::builder()
        .r#type(ty.clone())
        .key(k.key.clone())
        .code(k.code.clone())
        .windows_virtual_key_code(k.vk)
        .native_virtual_key_code(k.vk)
        .modifiers(modifiers);
    // Text is produced only without Ctrl/Alt/Meta (Shift alone still types).
    if matches!(ty, DispatchKeyEventType::KeyDown)
        && modifiers & 7 == 0
        && let Some(t) = &k.text
    {
        b = b.text(t.clone()).unmodified_text(t.clone());
    }
    page.execute(b.build()?).await.map_err(err)?;
    Ok(())
}

/// Presses keys: together (a hotkey: all down, then all up in reverse) or one after another.
pub async fn press(page: &Page, keys: &[KeyDef], together: bool) -> CdpResult<()> {
    if together {
        let mut mods = 0;
        for k in keys {
            mods |= k.modifier;
            key_event(page, DispatchKeyEventType::KeyDown, k, mods).await?;
        }
        for k in keys.iter().rev() {
            key_event(page, DispatchKeyEventType::KeyUp, k, mods).await?;
            mods &= !k.modifier;
        }
    } else {
        for k in keys {
            key_event(page, DispatchKeyEventType::KeyDown, k, 0).await?;
            key_event(page, DispatchKeyEventType::KeyUp, k, 0).await?;
        }
    }
    Ok(())
}

/// Inserts text at the caret (like typing, one CDP call).
pub async fn insert_text(page: &Page, text: &str) -> CdpResult<()> {
    page.execute(InsertTextParams::new(text)).await.map_err(err)?;
    Ok(())
}

/// A PNG screenshot of the viewport. Encoded with `optimizeForSpeed` (faster zlib settings:
/// the same pixels in a larger file), which cuts the encode, the biggest part of a screenshot.
pub async fn screenshot_png(page: &Page) -> CdpResult<Vec<u8>> {
    let p = CaptureScreenshotParams::builder()
        .format(CaptureScreenshotFormat::Png)
        .optimize_for_speed(true)
        .build();
    let res = page.execute(p).await.map_err(err)?;
    base64::engine::general_purpose::STANDARD
        .decode(AsRef::<str>::as_ref(&res.result.data))
        .map_err(|e| e.to_string())
}
