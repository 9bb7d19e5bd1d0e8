//! The tiny random models the repository ships for recipes' profiles to name (#43: OpenWebRL's
//! `smoke_vl` runs its policy's model class, Qwen3-VL, on a CPU; OpAgent's grounds with a
//! Qwen2.5-VL): each is what its generator writes today (byte for byte, its weights to 1e-6),
//! so that a change to the writer or the tokenizer's corpus shows here. `WRL_BLESS=1` writes
//! them again (tests/scripts/bless.sh).

// The shared check panics on purpose: a panic is a failed test.
#![allow(clippy::unwrap_used)]

use std::path::Path;

/// `recipes/models/tiny-qwen3-vl`: `run_vl::tiny_vl`'s model (a 2-layer text model of width 32
/// and a 2-block vision tower, random weights in Hugging Face layout; its tokenizer learned from
/// a sandbox page, a Hermes call and the element tools' schemas).
#[test]
fn the_shipped_tiny_qwen3_vl_is_what_its_writer_writes() {
    let dir = tempfile::tempdir().unwrap();
    same_as_shipped(&crate::run_vl::tiny_vl(dir.path()), "tiny-qwen3-vl");
}

/// `recipes/models/tiny-qwen2.5-vl`: `run_vl::tiny_qwen25_vl`'s model (the same text model, a
/// 2-block Qwen2.5-VL tower with window attention; its tokenizer learned from OpAgent's
/// coordinate tools' schemas too), the grounder of recipes/opagent.wrl's `smoke_vl`.
#[test]
fn the_shipped_tiny_qwen25_vl_is_what_its_writer_writes() {
    let dir = tempfile::tempdir().unwrap();
    same_as_shipped(&crate::run_vl::tiny_qwen25_vl(dir.path()), "tiny-qwen2.5-vl");
}

/// The model directory `fresh` against `recipes/models/NAME`, which `WRL_BLESS=1` writes.
fn same_as_shipped(fresh: &Path, name: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let shipped = root.join("recipes/models").join(name);
    let mut names: Vec<String> = std::fs::read_dir(fresh)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    if std::env::var_os("WRL_BLESS").is_some() {
        let _ = std::fs::remove_dir_all(&shipped);
        std::fs::create_dir_all(&shipped).unwrap();
        for n in &names {
            std::fs::copy(fresh.join(n), shipped.join(n)).unwrap();
        }
    }
    let mut have: Vec<String> = std::fs::read_dir(&shipped)
        .unwrap_or_else(|e| panic!("{}: {e} (WRL_BLESS=1 writes it)", shipped.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    have.sort();
    assert_eq!(have, names, "the shipped model's files");
    for n in names.iter().filter(|n| !n.ends_with(".safetensors")) {
        let same = std::fs::read(fresh.join(n)).unwrap() == std::fs::read(shipped.join(n)).unwrap();
        assert!(same, "recipes/models/{name}/{n} is stale: WRL_BLESS=1 writes it again");
    }
    // The weights: the same tensors, equal to the last bits a platform's libm may round
    // differently (the writer's random normals go through `ln` and `cos`).
    let load = |dir: &Path| {
        candle_core::safetensors::load(dir.join("model.safetensors"), &candle_core::Device::Cpu)
            .unwrap()
    };
    let (a, b) = (load(fresh), load(&shipped));
    let mut tensors: Vec<&String> = a.keys().collect();
    tensors.sort();
    let mut shipped_tensors: Vec<&String> = b.keys().collect();
    shipped_tensors.sort();
    assert_eq!(tensors, shipped_tensors, "the shipped model's tensors are stale: WRL_BLESS=1");
    for name in tensors {
        let (x, y) = (&a[name], &b[name]);
        assert_eq!((x.dims(), x.dtype()), (y.dims(), y.dtype()), "{name}");
        let worst = (x - y).unwrap().abs().unwrap().flatten_all().unwrap().max(0).unwrap();
        let worst = worst.to_scalar::<f32>().unwrap();
        assert!(worst <= 1e-6, "{name} differs by {worst}: WRL_BLESS=1 writes it again");
    }
}
