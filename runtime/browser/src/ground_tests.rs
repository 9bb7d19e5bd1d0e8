//! The grounding of element actions, case by case: points in each space, the calls each action
//! becomes, and the errors.

use std::collections::BTreeMap;

use super::*;

fn boxes(elements: &[(u32, [i32; 4])]) -> StepBoxes {
    StepBoxes {
        viewport: [640, 400],
        elements: elements.iter().copied().collect::<BTreeMap<_, _>>(),
    }
}

#[test]
fn centres_map_to_each_space() {
    // (rect, pixels point, 0–1000 point) on a 640x400 viewport.
    let table: [([i32; 4], [f64; 2], [f64; 2]); 5] = [
        ([100, 50, 40, 20], [120.0, 60.0], [188.0, 150.0]),
        ([0, 0, 2, 2], [1.0, 1.0], [2.0, 3.0]),
        ([600, 380, 40, 20], [620.0, 390.0], [969.0, 975.0]),
        ([-10, 390, 20, 19], [0.0, 399.0], [0.0, 999.0]), // centre (0, 399.5): the edge's pixel
        ([310, 190, 21, 21], [320.0, 200.0], [501.0, 501.0]),
    ];
    for (rect, px, norm) in table {
        let b = boxes(&[(7, rect)]);
        let click = |set| ground(&Elem::Click { id: 7 }, &b, set).unwrap();
        let web = |p| OpenWebRl::Click { point_2d: p, clicks: 1, button: MouseButton::Left };
        assert_eq!(click(ToolSet::Openwebrl), [Action::Openwebrl(web(px))], "{rect:?}");
        assert_eq!(click(ToolSet::OpenwebrlNorm), [Action::OpenwebrlNorm(web(norm))], "{rect:?}");
        assert_eq!(click(ToolSet::Opagent), [Action::Opagent(OpAgent::Click { coords: norm })]);
    }
}

#[test]
fn each_action_becomes_the_sets_calls() {
    let b = boxes(&[(3, [200, 100, 100, 40])]);
    let at = [391.0, 300.0];
    let web = |t| Action::OpenwebrlNorm(t);
    let typed = Elem::Type { id: 3, text: "blue mug".into(), submit: true };
    assert_eq!(
        ground(&typed, &b, ToolSet::OpenwebrlNorm).unwrap(),
        [
            web(OpenWebRl::Click { point_2d: at, clicks: 1, button: MouseButton::Left }),
            web(OpenWebRl::Write { message: "blue mug".into() }),
            web(OpenWebRl::PressKeys { keys: vec!["Enter".into()], is_hotkey: false, presses: 1 }),
        ]
    );
    assert_eq!(
        ground(&typed, &b, ToolSet::Opagent).unwrap(),
        [Action::Opagent(OpAgent::Type {
            coords: at,
            content: "blue mug".into(),
            press_enter_after: 1
        })]
    );
    let table: [(Elem, Action, Action); 6] = [
        (
            Elem::Scroll { direction: Direction::Down },
            web(OpenWebRl::Scroll { direction: Direction::Down, amount: 0.5, point_2d: None }),
            Action::Opagent(OpAgent::Scroll {
                direction: Direction::Down,
                distance: 200.0,
                coords: None,
            }),
        ),
        (Elem::Back, web(OpenWebRl::GoBack), Action::Opagent(OpAgent::GoBack)),
        (
            Elem::Answer { text: "12.50".into() },
            web(OpenWebRl::Done { response: "12.50".into() }),
            Action::Opagent(OpAgent::Answer { text: "12.50".into() }),
        ),
        (
            Elem::Done,
            web(OpenWebRl::Done { response: String::new() }),
            Action::Opagent(OpAgent::Answer { text: String::new() }),
        ),
        (
            Elem::Goto { url: "/shop/".into() },
            web(OpenWebRl::GotoUrl { url: "/shop/".into() }),
            Action::Opagent(OpAgent::Goto { url: "/shop/".into() }),
        ),
        (
            Elem::Press { key: "Control+a".into() },
            web(OpenWebRl::PressKeys {
                keys: vec!["Control".into(), "a".into()],
                is_hotkey: true,
                presses: 1,
            }),
            Action::Opagent(OpAgent::Press { key: "Control+a".into(), coords: None }),
        ),
    ];
    for (e, openwebrl, opagent) in table {
        assert_eq!(ground(&e, &b, ToolSet::OpenwebrlNorm).unwrap(), [openwebrl], "{e:?}");
        assert_eq!(ground(&e, &b, ToolSet::Opagent).unwrap(), [opagent], "{e:?}");
    }
    // The element tools keep the action as it is.
    assert_eq!(ground(&typed, &b, ToolSet::Elem).unwrap(), [Action::Elem(typed.clone())]);
}

#[test]
fn missing_and_off_screen_elements_are_errors() {
    let b = boxes(&[(1, [10, 420, 50, 20]), (2, [10, 10, 50, 20])]);
    let click = |id| ground(&Elem::Click { id }, &b, ToolSet::OpenwebrlNorm);
    assert_eq!(click(9), Err(GroundError::NoBox(9)));
    assert!(matches!(click(1), Err(GroundError::OffScreen { id: 1, .. })), "{:?}", click(1));
    assert!(click(2).is_ok());
    let select = Elem::Select { id: 2, option: "Green".into() };
    assert!(matches!(
        ground(&select, &b, ToolSet::OpenwebrlNorm),
        Err(GroundError::NoTool { action: "select", .. })
    ));
    assert!(ground(&select, &b, ToolSet::Opagent).is_ok());
}

#[test]
fn the_expert_scrolls_to_an_element_whose_centre_is_out_of_view() {
    let vp = (640, 400);
    assert_eq!(scroll_to(Some([10, 420, 50, 20]), vp), Some(Direction::Down));
    assert_eq!(scroll_to(Some([10, 390, 50, 30]), vp), Some(Direction::Down)); // centre 405
    assert_eq!(scroll_to(Some([10, 380, 50, 30]), vp), None); // centre 395: clicked in view
    assert_eq!(scroll_to(Some([10, -40, 50, 30]), vp), Some(Direction::Up));
    assert_eq!(scroll_to(Some([700, 10, 50, 30]), vp), Some(Direction::Right));
    assert_eq!(scroll_to(None, vp), None);
}
