//! Qwen3-VL's multimodal RoPE positions held to transformers 5.25's `get_rope_index` on two
//! sequences (printed by it for the tiny checkpoint of bench/hf-parity/vision_tower.py: image
//! token 250, vision start 248, end 249, merge 2), the interleaved frequency layout, and the
//! sequences it refuses.

use wrl_trainer::vision::Grid;
use wrl_trainer::vision::mrope::{MropeError, MropeLayout, RopeIndex, mrope_cos_sin, rope_index};

const IMAGE: u32 = 250;
const VIDEO: u32 = 251;

fn grid(t: usize, h: usize, w: usize) -> Grid {
    Grid { t, h, w }
}

#[test]
fn positions_match_transformers() {
    // Text, one 4 × 6-patch image (2 × 3 tokens), text: the text after it resumes at 3 + 3.
    let ids = [[10, 11, 248].as_slice(), &[IMAGE; 6], &[249, 12, 13]].concat();
    let got = rope_index(&ids, IMAGE, VIDEO, &[grid(1, 4, 6)], 2).unwrap();
    let want = RopeIndex {
        positions: [
            vec![0, 1, 2, 3, 3, 3, 3, 3, 3, 6, 7, 8],
            vec![0, 1, 2, 3, 3, 3, 4, 4, 4, 6, 7, 8],
            vec![0, 1, 2, 3, 4, 5, 3, 4, 5, 6, 7, 8],
        ],
        delta: -3,
    };
    assert_eq!(got, want);

    // Two images of different shapes (2 × 2 and 3 × 1 tokens) with text between.
    let ids =
        [[7, 248].as_slice(), &[IMAGE; 4], &[249, 8, 9, 248], &[IMAGE; 3], &[249, 5]].concat();
    let got = rope_index(&ids, IMAGE, VIDEO, &[grid(1, 4, 4), grid(1, 6, 2)], 2).unwrap();
    let want = RopeIndex {
        positions: [
            vec![0, 1, 2, 2, 2, 2, 4, 5, 6, 7, 8, 8, 8, 11, 12],
            vec![0, 1, 2, 2, 3, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
            vec![0, 1, 2, 3, 2, 3, 4, 5, 6, 7, 8, 8, 8, 11, 12],
        ],
        delta: -2,
    };
    assert_eq!(got, want);

    // Frequencies 0..6 with section [2, 2, 2] read rows T H W T H W: token 4 is (2, 3, 2).
    let inv = [1.0f32, 0.5, 0.25, 0.125, 0.0625, 0.03125];
    let (cos, _) = mrope_cos_sin(&got, &inv, [2, 2, 2], MropeLayout::Interleaved);
    let row = &cos[4 * 12..5 * 12];
    let want: Vec<f32> = [2.0f32, 1.5, 0.5, 0.25, 0.1875, 0.0625].iter().map(|a| a.cos()).collect();
    assert_eq!(&row[..6], want.as_slice());
    assert_eq!(&row[6..], want.as_slice());
    // Qwen2.5-VL's sections read T T H H W W instead: (2, 2, 3, 3, 2, 2).
    let (cos, _) = mrope_cos_sin(&got, &inv, [2, 2, 2], MropeLayout::Sectioned);
    let row = &cos[4 * 12..5 * 12];
    let want: Vec<f32> =
        [2.0f32, 1.0, 0.75, 0.375, 0.125, 0.0625].iter().map(|a| a.cos()).collect();
    assert_eq!(&row[..6], want.as_slice());
    assert_eq!(&row[6..], want.as_slice());

    // Text only: 0, 1, 2 on every row.
    let plain = rope_index(&[1, 2, 3], IMAGE, VIDEO, &[], 2).unwrap();
    assert_eq!(plain.positions[2], vec![0, 1, 2]);
    assert_eq!(plain.delta, 0);
}

#[test]
fn mismatched_placeholders_are_refused() {
    let ids = [[1].as_slice(), &[IMAGE; 5], &[2]].concat();
    assert_eq!(
        rope_index(&ids, IMAGE, VIDEO, &[grid(1, 4, 6)], 2),
        Err(MropeError::RunLength { image: 0, run: 5, tokens: 6 })
    );
    assert_eq!(
        rope_index(&ids, IMAGE, VIDEO, &[], 2),
        Err(MropeError::ImageCount { runs: 1, images: 0 })
    );
    assert_eq!(
        rope_index(&[1, 2], IMAGE, VIDEO, &[grid(1, 2, 2)], 2),
        Err(MropeError::ImageCount { runs: 0, images: 1 })
    );
    assert_eq!(rope_index(&[1, VIDEO], IMAGE, VIDEO, &[], 2), Err(MropeError::Video { at: 1 }));
}
