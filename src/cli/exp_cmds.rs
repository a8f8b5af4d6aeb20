//! The experiment commands: run, report, runs, export, compare.

use clap::Args;
use std::path::{Path, PathBuf};

use super::{input, need_root, print_json, running, CmdResult, Fail};
use crate::experiment::{file, matrix, run as erun};
use crate::report::{compare as rcompare, html, table};
use crate::store::{PointRecord, Store};

const DEFAULT_DB: &str = "vnetlab.sqlite";

#[derive(Args)]
pub struct RunArgs {
    /// The experiment file (TOML), e.g. experiments/quick.toml
    file: PathBuf,
    /// The results store (SQLite); made if missing
    #[arg(long, default_value = DEFAULT_DB)]
    db: PathBuf,
    /// Where the HTML report goes
    #[arg(long, default_value = "out")]
    out: PathBuf,
    /// Print the points without running them
    #[arg(long)]
    list: bool,
    #[arg(long)]
    json: bool,
}

/// Opens an existing store for reading; never makes one.
fn existing(db: &Path) -> Result<Store, Fail> {
    if !db.exists() {
        return Err(Fail::Input(format!("no store at {}: run an experiment first (`vnetlab run experiments/quick.toml`) or pass --db", db.display())));
    }
    input(Store::open(db))
}

pub fn run(a: RunArgs) -> CmdResult {
    let text = std::fs::read_to_string(&a.file).map_err(|e| Fail::Input(format!("cannot read {}: {e}", a.file.display())))?;
    let exp = input(file::parse(&text, &a.file.display().to_string()))?;
    let points = matrix::expand(&exp);
    if a.list {
        if a.json {
            print_json(&points);
        } else {
            let secs: f64 = points.iter().map(matrix::estimate_s).sum();
            println!("{}: {} points, about {:.0} s", exp.name, points.len(), secs);
            for p in &points {
                println!("{}", matrix::describe(p));
            }
        }
        return Ok(());
    }
    need_root("vnetlab run")?;
    let store = input(Store::open(&a.db))?;
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr()) && !a.json;
    let bar = tty.then(|| {
        let b = indicatif::ProgressBar::new(points.len() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} points, {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    });
    let mut last = usize::MAX;
    let mut progress = |done: usize, total: usize, left: f64, what: &str| {
        let eta = if left >= 60.0 { format!("{:.0} min {:02.0} s left", (left / 60.0).floor(), left % 60.0) } else { format!("{left:.0} s left") };
        match &bar {
            Some(b) => {
                b.set_position(done as u64);
                b.set_message(format!("{eta} · {}", what.trim()));
            }
            None if !a.json && done != last => {
                eprintln!("[{done}/{total}] {eta} · {}", what.trim());
                last = done;
            }
            None => {}
        }
    };
    let outcome = running(erun::run(&a.file, &store, &mut progress))?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let rrow = running(store.run(&outcome.run_id.to_string()))?;
    let pts: Vec<PointRecord> = running(store.points(outcome.run_id))?.into_iter().map(|(_, p)| p).collect();
    let html_path = a.out.join(format!("run-{}.html", outcome.run_id));
    running(write_report(&rrow, &pts, &html_path))?;
    if a.json {
        print_json(&serde_json::json!({"run": rrow, "points": pts, "html": html_path}));
    } else {
        println!("run {} ({}): {} of {} points, {} failed, status {}", rrow.id, rrow.name, outcome.points_done, points.len(), outcome.points_failed, outcome.status);
        print!("{}", table::summary(&pts));
        println!("report: {}", html_path.display());
    }
    if outcome.status == "interrupted" {
        return Err(Fail::Run(format!("interrupted: {} finished points kept in {} (run {})", outcome.points_done, a.db.display(), outcome.run_id)));
    }
    Ok(())
}

pub fn write_report(run: &crate::store::RunRow, pts: &[PointRecord], path: &Path) -> Result<(), String> {
    let page = html::page(run, pts, &crate::plan::report_sections(run, pts))?;
    if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot make {}: {e}", d.display()))?;
    }
    std::fs::write(path, page).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[derive(Args)]
pub struct ReportArgs {
    /// The run: its id, or latest
    #[arg(default_value = "latest")]
    run: String,
    #[arg(long, default_value = DEFAULT_DB)]
    db: PathBuf,
    /// Write the HTML report to this file
    #[arg(long)]
    html: Option<PathBuf>,
    #[arg(long)]
    json: bool,
}

pub fn report(a: ReportArgs) -> CmdResult {
    let store = existing(&a.db)?;
    let r = input(store.run(&a.run))?;
    let pts: Vec<PointRecord> = running(store.points(r.id))?.into_iter().map(|(_, p)| p).collect();
    if let Some(h) = &a.html {
        running(write_report(&r, &pts, h))?;
    }
    if a.json {
        print_json(&serde_json::json!({"run": r, "points": pts}));
    } else {
        println!("run {} ({}), {}: {} of {} points", r.id, r.name, r.status, r.points, r.planned_points);
        print!("{}", table::summary(&pts));
        if let Some(h) = &a.html {
            println!("report: {}", h.display());
        }
    }
    Ok(())
}

#[derive(Args)]
pub struct RunsArgs {
    #[arg(long, default_value = DEFAULT_DB)]
    db: PathBuf,
    #[arg(long)]
    json: bool,
}

pub fn runs(a: RunsArgs) -> CmdResult {
    let store = existing(&a.db)?;
    let rows = running(store.runs())?;
    if a.json {
        print_json(&rows);
    } else if rows.is_empty() {
        println!("{} holds no runs", a.db.display());
    } else {
        print!("{}", table::runs(&rows));
    }
    Ok(())
}

#[derive(Args)]
pub struct ExportArgs {
    /// The run: its id, or latest
    run: String,
    /// CSV (the only format today; JSON is `vnetlab report RUN --json`)
    #[arg(long)]
    csv: bool,
    #[arg(long, default_value = DEFAULT_DB)]
    db: PathBuf,
    /// Write to this file instead of stdout
    #[arg(short = 'o', long)]
    output: Option<PathBuf>,
}

pub fn export(a: ExportArgs) -> CmdResult {
    if !a.csv {
        return Err(Fail::Input("say the format: --csv (or use `vnetlab report RUN --json`)".into()));
    }
    let store = existing(&a.db)?;
    let r = input(store.run(&a.run))?;
    let pts: Vec<PointRecord> = running(store.points(r.id))?.into_iter().map(|(_, p)| p).collect();
    let csv = table::csv(&r, &pts);
    match &a.output {
        Some(p) => running(std::fs::write(p, csv).map_err(|e| format!("cannot write {}: {e}", p.display())))?,
        None => print!("{csv}"),
    }
    Ok(())
}

#[derive(Args)]
pub struct CompareArgs {
    run_a: String,
    run_b: String,
    #[arg(long, default_value = DEFAULT_DB)]
    db: PathBuf,
    #[arg(long)]
    json: bool,
}

pub fn compare(a: CompareArgs) -> CmdResult {
    let store = existing(&a.db)?;
    let (ra, rb) = (input(store.run(&a.run_a))?, input(store.run(&a.run_b))?);
    let pa: Vec<PointRecord> = running(store.points(ra.id))?.into_iter().map(|(_, p)| p).collect();
    let pb: Vec<PointRecord> = running(store.points(rb.id))?.into_iter().map(|(_, p)| p).collect();
    let rows = rcompare::compare(&pa, &pb);
    if a.json {
        print_json(&serde_json::json!({"a": ra.id, "b": rb.id, "rows": rows}));
        return Ok(());
    }
    if rows.is_empty() {
        println!("runs {} and {} share no points (same mode, test, size, direction, offloads, wire)", ra.id, rb.id);
        return Ok(());
    }
    println!("B = run {}, A = run {}; median (min–max) over repeats; ratio = B ÷ A of the medians; * = outside both runs' spread, ? = no spread (single runs), ! = unstable (>10 % across repeats)", rb.id, ra.id);
    println!("{:<78} {:>24} {:>24} {:>8} {:>10}", "point", "A", "B", "ratio", "CPU/Gb ×");
    for r in rows {
        let mark = match r.significant {
            Some(true) => "*",
            Some(false) => "",
            None => "?",
        };
        let o = |v: Option<f64>, p: usize| v.map(|x| format!("{x:.p$}")).unwrap_or("-".into());
        let with = |v: Option<f64>, r: Option<[f64; 2]>| match r {
            Some([lo, hi]) => format!("{} ({lo:.3}–{hi:.3})", o(v, 3)),
            None => o(v, 3),
        };
        let flag = if r.unstable { "!" } else { "" };
        println!("{:<78} {:>24} {:>24} {:>7}{mark:1}{flag:1} {:>10}", r.key, with(r.a, r.range_a), with(r.b, r.range_b), o(r.ratio, 3), o(r.cpu_ratio, 3));
    }
    Ok(())
}
