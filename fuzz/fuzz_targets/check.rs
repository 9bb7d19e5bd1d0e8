//! Fuzzes the whole `wrlc check` pipeline on arbitrary bytes (invalid UTF-8 included): load,
//! parse, and render every diagnostic in both formats. It must not panic, and must exit 0 or 1.
#![no_main]

use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("wrl-fuzz-check-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path: PathBuf = dir.join("input.wrl");
    std::fs::write(&path, data).expect("write the input");
    for format in ["human", "json"] {
        let (code, _, err) = wrl_cli::run_captured([
            "check".as_ref(),
            "--error-format".as_ref(),
            format.as_ref(),
            path.as_os_str(),
        ]);
        assert!(code == 0 || code == 1, "exit {code}: {err}");
    }
});
