//! The Qwen-VL image processor: `smart_resize` against transformers' own figures, the patch
//! rows' order worked out by hand, and the preprocessor settings it honours or refuses by name.
//! (Pixel values against transformers: bench/vision-parity.sh.)

use wrl_trainer::vision::{ImageProcessor, ProcessorError, SizeError, smart_resize};

/// (height, width, factor, min_pixels, max_pixels) → transformers 5.25's
/// `image_processing_pil_qwen2_vl.smart_resize`, printed by it (ties round to even: 70 → 56).
#[test]
fn smart_resize_matches_transformers() {
    let cases = [
        (720, 1280, 28, 3136, 12845056, (728, 1288)),
        (720, 1280, 32, 65536, 16777216, (704, 1280)),
        (720, 1280, 28, 3136, 200704, (336, 588)),
        (37, 53, 28, 3136, 12845056, (56, 84)),
        (37, 53, 32, 65536, 16777216, (224, 320)),
        (1001, 999, 28, 3136, 12845056, (1008, 1008)),
        (2000, 3000, 28, 3136, 1003520, (812, 1204)),
        (42, 42, 28, 3136, 12845056, (56, 56)),
        (70, 70, 28, 3136, 12845056, (56, 56)),
        (14, 2800, 28, 3136, 12845056, (28, 812)),
        (5, 7, 28, 3136, 200704, (56, 84)),
        (1080, 1920, 32, 65536, 1003520, (736, 1312)),
        (98, 98, 28, 3136, 12845056, (112, 112)),
        (126, 42, 28, 3136, 12845056, (112, 56)),
    ];
    for (h, w, factor, min, max, want) in cases {
        assert_eq!(smart_resize(h, w, factor, min, max), Ok(want), "{h}×{w} factor {factor}");
    }
    assert_eq!(
        smart_resize(10, 2500, 28, 3136, 12845056),
        Err(SizeError::AspectRatio { height: 10, width: 2500 })
    );
    assert!(matches!(smart_resize(5, 7, 28, 0, 200704), Err(SizeError::TooSmall { .. })));
}

/// A 4×8 image whose red is its column, green its row; patch 2, merge 2, temporal 2, no
/// resizing or scaling: row r is merged block (0, r / 4), patch (r % 4 / 2, r % 2) in it, each
/// row channels × temporal × 2 × 2, the still image repeated in both temporal slots.
#[test]
fn patch_rows_follow_transformers_order() {
    let p = ImageProcessor::from_json(
        r#"{"patch_size": 2, "merge_size": 2, "temporal_patch_size": 2, "do_resize": false,
            "do_rescale": false, "do_normalize": false}"#,
    )
    .unwrap();
    let (w, h) = (8usize, 4usize);
    let rgb: Vec<u8> =
        (0..h).flat_map(|y| (0..w).flat_map(move |x| [x as u8, y as u8, 7])).collect();
    let px = p.process(&rgb, w, h, 3).unwrap();
    assert_eq!((px.grid.t, px.grid.h, px.grid.w), (1, 2, 4));
    assert_eq!((px.rows, px.cols), (8, 3 * 2 * 2 * 2));
    assert_eq!(px.grid.tokens(2), 2);
    for r in 0..8 {
        let (block, mh, mw) = (r / 4, (r % 4) / 2, r % 2);
        let (y0, x0) = (mh * 2, (block * 2 + mw) * 2);
        let row = &px.values[r * px.cols..(r + 1) * px.cols];
        let mut want = Vec::new();
        for c in 0..3 {
            for _t in 0..2 {
                for y in y0..y0 + 2 {
                    for x in x0..x0 + 2 {
                        want.push([x as f32, y as f32, 7.0][c]);
                    }
                }
            }
        }
        assert_eq!(row, want.as_slice(), "row {r}");
    }
}

/// Rescale in f64 then f32, normalise in f32: the byte 200 with CLIP's red mean and std.
#[test]
fn rescale_and_normalise_as_numpy() {
    let p = ImageProcessor::from_json(
        r#"{"do_resize": false, "patch_size": 1, "merge_size": 1, "temporal_patch_size": 1}"#,
    )
    .unwrap();
    let px = p.process(&[200, 0, 255], 1, 1, 3).unwrap();
    let red = ((200f64 * (1.0 / 255.0)) as f32 - 0.481_454_66f32) / 0.268_629_54f32;
    assert_eq!(px.values[0], red);
}

#[test]
fn qwen3_vl_sizes_and_refusals() {
    let q3 = ImageProcessor::from_json(
        r#"{"size": {"longest_edge": 16777216, "shortest_edge": 65536}, "patch_size": 16,
            "temporal_patch_size": 2, "merge_size": 2, "image_mean": [0.5, 0.5, 0.5],
            "image_std": [0.5, 0.5, 0.5], "processor_class": "Qwen3VLProcessor",
            "image_processor_type": "Qwen2VLImageProcessorFast"}"#,
    )
    .unwrap();
    assert_eq!((q3.min_pixels, q3.max_pixels, q3.factor()), (65536, 16777216, 32));
    // A 1280×720 screenshot: 704×1280 pixels, 44×80 patches, 880 tokens after the merger.
    let grid = q3.grid(720, 1280).unwrap();
    assert_eq!((grid.h, grid.w, grid.tokens(2)), (44, 80, 880));

    let err = |json: &str| ImageProcessor::from_json(json).unwrap_err();
    assert_eq!(
        err(r#"{"do_center_crop": true}"#),
        ProcessorError::UnknownKey("do_center_crop".into())
    );
    assert!(
        matches!(err(r#"{"resample": 2}"#), ProcessorError::Unsupported { key, .. } if key == "resample")
    );
    assert!(
        matches!(err(r#"{"image_mean": [0.5, 0.5]}"#), ProcessorError::Unsupported { key, .. } if key == "image_mean")
    );
    assert!(
        matches!(err(r#"{"image_std": 0}"#), ProcessorError::Unsupported { key, .. } if key == "image_std")
    );
    assert_eq!(
        err(r#"{"size": {"height": 3}}"#).to_string(),
        "preprocessor_config.json: `size`: expected `shortest_edge`"
    );

    let translucent = [10, 20, 30, 128];
    assert!(matches!(q3.process(&translucent, 1, 1, 4), Err(ProcessorError::Image(_))));
    assert!(matches!(q3.process(&[0; 5], 1, 1, 3), Err(ProcessorError::Image(_))));
}

/// PIL's bicubic on a 9×8 image of bytes `(i × 37 + 11) mod 256`, printed by Pillow 13.0
/// (`Image.fromarray(a).resize((W, H), Image.BICUBIC).tobytes().hex()`): down both ways with the
/// vertical pass first (7×3), up one way and down the other (12×5, 5×7), up both (16×13).
#[test]
fn bicubic_resize_is_pils_bit_for_bit() {
    let (w, h) = (9usize, 8usize);
    let src: Vec<u8> = (0..w * h * 3).map(|i| ((i * 37 + 11) % 256) as u8).collect();
    let cases = [
        (
            7,
            3,
            "8d6754979a6e6f7c6289b19e446795a667827b73949fb475677a9089596c7c80988b7b4a8c9c945065789189a19d615c9d927754717a8b96836a6d9d9d775d",
        ),
        (
            12,
            5,
            "651747666d9da0908bd96728586e919dc9808eb5682b568394bfe5835c85704c757ca6cbeec4147d856f6d9b75b1e1282557666f9bd17889ba2b24546995bdd45455be42464c7da4bce97f4f796b3d6a9996afd68425536d66989c9988d98123566f8e9bc7938bb57f1b497587b8e9c24677b037666f8daae043207b506669a17caddf402353656997cd7f87b84016455e88b6b8944ba88138457093aede9a4f78713b669896acdc9d2b51746494979e89ed9f1e",
        ),
        (
            5,
            7,
            "535a82ac596f85b0576a8aaf5f779cb36b6688b74d618fbe756c93b0558094c0456390675c6c9c7c5d738c695c699c7d7070a69772779a9471689b829b7faca7497c98785474a76a4470a8af568798775775916f4d7e9599517b8da5617a9d8b5481a4ab5889aab15d",
        ),
        (
            16,
            13,
            "00294e1b577c70a1c5c05584ea00358f3d7e609497b5e120acd11043686c6084bda7ccf14c7da2053c615a85aa8fb3d86212446441726d91bbae887ae0662b85656c56839aabd477a2c767395e6f507aab9bc2e78873986b3257757ba07ca9ceff1332c63660657aa992ca68cef819739a4e44699d99beee90b5de274c7237688d87b0d5da6186f9204599698e5d97bcf9b423bba05156759a82b24fbfee00648d3635598f8baee47ca6d3063d631a5a7d77a1c6cf4677ef00368b547f4d89addeff0ca4d63a466c88749767afd4335079481e4a7a74a0ca8194bb3f275240426f6990b6b56563d63920785d6d3e749ecff50095bb21375c716589b6a0c5d63d6a86083b615791b5a184acd91343ab275f5e7ea79bc351c7d90c69885c2f558fc1e57f80ab74184d69437aaf93b6ea8e5b867c2a506a78a591999de98834b5764a4f71968ac196b8ec855a847a1f4374afd5ff7c9bc82b3d63416a8e86a6cbdd4a70f11841805e9673ae8dc9fc239ac7333f64847b9fdba8cdfd496f980f355990c6f2a78cb6cb2e539f5c7f7496bcc22f61dd0032704a88649f79bae8038bb4183055746d90ca98bee92e608700264a7bb7dbb079a1ff1543be41716389acaa644ac746185e556f568784abd15177a04c1645675282b18faed36449754c0c3b6da7cc9b6b92e40b34a32b61547d9d9cc93fb8d80c4f7355466ba19bc0e36a91b20c365b3a72978a9fc4ce3e66f1022c5b88ba898f80d29922917b4642698e8abc9ea6d7953d656d30588881aee09f7fad9e24497c56857397b2c3a054f2a01a5175b07faa76c8ff1887b835385d8780a4e39cc1f8335882234f7370a4c9c7759aff1a3faf447b6394a8ade94adbff10",
        ),
    ];
    for (to_w, to_h, hex) in cases {
        let got: String = wrl_trainer::vision::resize_bicubic(&src, w, h, to_w, to_h)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(got, hex, "{w}×{h} → {to_w}×{to_h}");
    }
}

/// The checker counts a screenshot's tokens before any processor exists
/// (`wrl_check::sequence::screenshot_tokens`, for E0404 and the estimate): the same count as the
/// processor's `smart_resize` over viewports from phone to 4K, for both families' grids and
/// budgets that bind and that do not (the processor's minimum is below every one of these).
#[test]
fn the_checkers_screenshot_count_is_the_processors() {
    let budgets = [200_704, 262_144, 1_003_520, 1_048_576, 16_777_216];
    let mut compared = 0;
    for (w, h) in [(390, 844), (800, 600), (1280, 720), (1280, 1000), (1366, 768), (1920, 1080)]
        .into_iter()
        .chain([(2560, 1440), (3840, 2160), (1000, 1280), (1024, 1024)])
    {
        for factor in [28usize, 32] {
            for max in budgets {
                let (rh, rw) = smart_resize(h, w, factor, 4 * factor * factor, max).unwrap();
                let runtime = (rh / factor) * (rw / factor);
                let checker = wrl_check::sequence::screenshot_tokens(
                    w as f64,
                    h as f64,
                    factor as u32,
                    max as f64,
                );
                assert_eq!(checker, Some(runtime as f64), "{w}×{h}, factor {factor}, budget {max}");
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 100);
}
