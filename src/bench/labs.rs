//! `vnetlab bench labs`: how long `up` and `down` take for a lab of many guests (bridge and
//! paravirt by default, 200 guests), and `vnetlab bench qemu --boot`: how long `up` takes to a
//! QEMU guest whose agent answers. Each is timed for this build and, with `--against BIN`, for
//! another build (the previous one) side by side, alternating A B B A so a disturbed spell of
//! the host falls on both, each build in a state and cache folder of its own (its guest image
//! built by one untimed warm-up first). Both builds run as child processes, the same way.

use super::Error;
use crate::vocab::Mode;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A build of vnetlab to time.
#[derive(Clone, Debug)]
pub struct Build {
    pub label: String,
    pub bin: PathBuf,
}

/// One lab size timed for one build: `up` and `down` seconds over the repeats.
#[derive(serde::Serialize, Clone, Debug)]
pub struct Timed {
    pub build: String,
    pub mode: Mode,
    pub guests: u32,
    pub up_s: Vec<f64>,
    pub down_s: Vec<f64>,
}

/// How long one `up` or `down` may take before the bench gives up on it.
const LIMIT: Duration = Duration::from_secs(300);

/// The median of `v` (0 for none).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// The order of runs: A B B A, A B B A, … (one build: A A A …).
pub fn order(builds: usize, repeat: u32) -> Vec<usize> {
    (0..repeat as usize)
        .map(|i| match builds {
            2 if i % 4 == 1 || i % 4 == 2 => 1,
            _ => 0,
        })
        .collect()
}

/// Times `up` and `down` of a `mode` lab of `guests` for every build, `repeat` times each.
pub fn measure(
    builds: &[Build],
    cases: &[(Mode, u32)],
    repeat: u32,
    progress: &dyn Fn(&str),
) -> Result<Vec<Timed>, Error> {
    let top = std::env::temp_dir().join(format!("vnetlab-bench-labs-{}", std::process::id()));
    let dirs = folders(&top, builds.len())?;
    let result = measure_in(builds, &dirs, cases, repeat, progress);
    // A lab left by a run cut short is removed by its own build's cleanup; the folders go only
    // once no journal is left in them (a journal is how a lab is found and removed).
    let mut left = false;
    for (b, d) in builds.iter().zip(&dirs) {
        let _ = run(b, d, &["cleanup"]);
        left |= std::fs::read_dir(d.join("state"))
            .map(|r| {
                r.flatten()
                    .any(|e| e.path().extension().is_some_and(|x| x == "journal"))
            })
            .unwrap_or(false);
    }
    match (left, result) {
        (false, r) => {
            let _ = std::fs::remove_dir_all(&top);
            r
        }
        (true, _) => Err(Error::Failed(format!(
            "a lab of the bench is still there: remove it with VNETLAB_STATE_DIR={}/bN/state vnetlab cleanup",
            top.display()
        ))),
    }
}

fn measure_in(
    builds: &[Build],
    dirs: &[PathBuf],
    cases: &[(Mode, u32)],
    repeat: u32,
    progress: &dyn Fn(&str),
) -> Result<Vec<Timed>, Error> {
    let mut out = Vec::new();
    for &(mode, guests) in cases {
        let mut rows: Vec<Timed> = builds
            .iter()
            .map(|b| Timed {
                build: b.label.clone(),
                mode,
                guests,
                up_s: vec![],
                down_s: vec![],
            })
            .collect();
        for (i, b) in builds.iter().enumerate() {
            progress(&format!("{}: a first {mode} lab (untimed)", b.label));
            once(b, &dirs[i], mode, guests)?;
        }
        let runs = order(builds.len(), repeat * builds.len() as u32);
        for (n, &i) in runs.iter().enumerate() {
            progress(&format!(
                "{}: {mode} lab of {guests} guest(s), {}/{}",
                builds[i].label,
                n + 1,
                runs.len()
            ));
            let (up, down) = once(&builds[i], &dirs[i], mode, guests)?;
            rows[i].up_s.push(up);
            rows[i].down_s.push(down);
        }
        out.extend(rows);
    }
    Ok(out)
}

/// A state and cache folder per build, under `top`.
fn folders(top: &Path, builds: usize) -> Result<Vec<PathBuf>, Error> {
    (0..builds)
        .map(|i| {
            let d = top.join(format!("b{i}"));
            std::fs::create_dir_all(d.join("state"))
                .and_then(|_| std::fs::create_dir_all(d.join("cache")))
                .map(|_| d)
                .map_err(|e| Error::Failed(format!("cannot make {}: {e}", top.display())))
        })
        .collect()
}

/// One `up` then `down` of a lab by build `b`: their seconds.
fn once(b: &Build, dir: &Path, mode: Mode, guests: u32) -> Result<(f64, f64), Error> {
    let name = format!("bl{}", std::process::id() % 10_000);
    let n = guests.to_string();
    let mut args = vec!["up", "--name", &name, "--mode", mode.name(), "--guests", &n];
    if guests > 64 {
        args.push("--force");
    }
    let up = run(b, dir, &args)?;
    let down = run(b, dir, &["down", &name])?;
    Ok((up, down))
}

/// Runs `b` with `args` in its folders and returns the seconds it took.
fn run(b: &Build, dir: &Path, args: &[&str]) -> Result<f64, Error> {
    let t0 = Instant::now();
    let mut cmd = Command::new(&b.bin);
    cmd.args(args)
        .env("VNETLAB_STATE_DIR", dir.join("state"))
        .env("VNETLAB_CACHE_DIR", dir.join("cache"));
    let out = crate::lab::hostcmd::run_child(&mut cmd, None, LIMIT)?;
    let secs = t0.elapsed().as_secs_f64();
    if out.status != 0 {
        return Err(Error::Failed(format!(
            "{} {} failed: {}",
            b.label,
            args.join(" "),
            crate::lab::hostcmd::one_line(&out.stderr)
        )));
    }
    Ok(secs)
}

/// The table: per lab and build, the median up and down (min–max), and the ratio to the first.
pub fn table(rows: &[Timed]) -> Vec<String> {
    let mut out = vec![format!(
        "{:<12} {:>6}  {:<14} {:>20} {:>20}",
        "mode", "guests", "build", "up s (min–max)", "down s (min–max)"
    )];
    let span = |v: &[f64]| {
        let lo = v.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = v.iter().cloned().fold(0.0, f64::max);
        format!("{:.2} ({lo:.2}–{hi:.2})", median(v))
    };
    for r in rows {
        out.push(format!(
            "{:<12} {:>6}  {:<14} {:>20} {:>20}",
            r.mode.name(),
            r.guests,
            r.build,
            span(&r.up_s),
            span(&r.down_s)
        ));
    }
    for pair in rows.chunks(2) {
        if let [a, b] = pair {
            if a.mode == b.mode && a.guests == b.guests {
                out.push(format!(
                    "{} {} guest(s): {}/{} up {:.2}×, down {:.2}×",
                    a.mode.name(),
                    a.guests,
                    a.build,
                    b.build,
                    median(&a.up_s) / median(&b.up_s),
                    median(&a.down_s) / median(&b.down_s)
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_alternate_a_b_b_a_and_medians_are_middles() {
        assert_eq!(order(2, 8), [0, 1, 1, 0, 0, 1, 1, 0]);
        assert_eq!(order(1, 3), [0, 0, 0]);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }

    #[test]
    fn the_table_gives_each_build_and_their_ratio() {
        let t = |build: &str, up: f64| Timed {
            build: build.into(),
            mode: Mode::Bridge,
            guests: 200,
            up_s: vec![up, up * 2.0, up / 2.0],
            down_s: vec![0.1],
        };
        let lines = table(&[t("this", 1.0), t("previous", 4.0)]);
        assert!(lines[1].contains("1.00 (0.50–2.00)"), "{}", lines[1]);
        assert!(lines[3].contains("this/previous up 0.25×"), "{}", lines[3]);
    }
}
