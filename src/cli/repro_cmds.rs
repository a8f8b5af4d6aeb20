//! `vnetlab reproduce`: runs each paper's suite (quick or full), stores the run, checks the
//! paper's claims against it and writes one page per paper and an index; `--from-runs` re-renders
//! from the stored runs without measuring.

use clap::Args;
use std::path::PathBuf;

use super::exp_cmds::{execute, existing, output_dir};
use super::{need_root, print_json, CmdResult, Fail};
use crate::experiment::{file, matrix, run as erun};
use crate::records::{PointRecord, RunRef, RunRow};
use crate::reproduce::{self, claims::Checked, page, BuiltIn};
use crate::store::Store;

#[derive(Args)]
pub struct ReproduceArgs {
    /// The paper: icsnc2013, xen-lro, xen-passthrough, vmware-esx35, or all
    #[arg(default_value = "all")]
    paper: String,
    /// Run the reduced grids (all four in well under 15 minutes on a 2-core host)
    #[arg(long)]
    quick: bool,
    /// The results store (SQLite); made if missing
    #[arg(long, default_value = "vnetlab.sqlite")]
    db: PathBuf,
    /// Where the pages go (one per paper, an index, and each run's full report)
    #[arg(long, default_value = "out")]
    out: PathBuf,
    /// Measure nothing: render the pages from the latest stored run of each suite
    #[arg(long)]
    from_runs: bool,
    #[arg(long)]
    json: bool,
}

/// One paper's outcome.
#[derive(serde::Serialize)]
struct Done {
    paper: String,
    runs: Vec<i64>,
    page: PathBuf,
    claims: Vec<Checked>,
}

pub fn reproduce(a: ReproduceArgs) -> CmdResult {
    let papers = reproduce::select(&a.paper)?;
    if !a.from_runs {
        need_root("vnetlab reproduce")?;
    }
    output_dir(&a.out)?;
    let store = if a.from_runs {
        existing(&a.db)?
    } else {
        Store::open(&a.db)?
    };
    let t0 = std::time::Instant::now();
    let mut done = Vec::new();
    for b in papers {
        done.push(one(&a, &store, b)?);
    }
    let index: Vec<(String, String, Vec<Checked>)> = done
        .iter()
        .map(|d| (d.paper.clone(), d.paper.clone(), d.claims.clone()))
        .collect();
    std::fs::write(a.out.join("index.html"), page::index(&index))
        .map_err(|e| Fail::Run(format!("cannot write the index: {e}")))?;
    let secs = t0.elapsed().as_secs_f64();
    if a.json {
        print_json(&serde_json::json!({"papers": done, "seconds": secs}));
    } else {
        crate::outln!(
            "{} paper(s) in {:.0} s; pages in {}",
            done.len(),
            secs,
            a.out.join("index.html").display()
        );
    }
    Ok(())
}

/// The run of one of `b`'s suites: measured now, or the latest stored one (`--from-runs`; None
/// if none).
fn suite_run(
    a: &ReproduceArgs,
    store: &Store,
    b: &BuiltIn,
    text: &str,
) -> Result<Option<i64>, Fail> {
    let exp = file::parse(text, b.id)?;
    if a.from_runs {
        return Ok(store
            .runs()?
            .into_iter()
            .filter(|r| r.name == exp.name)
            .map(|r| r.id)
            .max());
    }
    if !a.json {
        crate::errln!(
            "{}: running {} ({} points)",
            b.id,
            exp.name,
            matrix::count(&exp)
        );
    }
    let loaded = erun::Loaded {
        text: text.to_string(),
        points: matrix::expand(&exp),
        file: exp,
    };
    let outcome = execute(&loaded, store, a.json)?;
    Ok(Some(outcome.run_id))
}

fn one(a: &ReproduceArgs, store: &Store, b: &BuiltIn) -> Result<Done, Fail> {
    let paper = reproduce::parse(b.file, b.id)?;
    let suites = if a.quick { b.quick } else { b.full };
    let mut runs = Vec::new();
    for text in suites {
        runs.extend(suite_run(a, store, b, text)?);
    }
    let (mut rows, mut points): (Vec<RunRow>, Vec<PointRecord>) = (vec![], vec![]);
    for &id in &runs {
        let row = store.find_run(RunRef::Id(id))?;
        let pts: Vec<PointRecord> = store.points(id)?.into_iter().map(|(_, p)| p).collect();
        crate::report::write_page(&row, &pts, &a.out.join(format!("run-{id}.html")))?;
        rows.push(row);
        points.extend(pts);
    }
    let checked = reproduce::check_all(&paper, &points);
    let path = a.out.join(format!("{}.html", b.id));
    std::fs::write(&path, page::render(&paper, &points, &checked, &rows))
        .map_err(|e| Fail::Run(format!("cannot write {}: {e}", path.display())))?;
    if !a.json {
        print_claims(&paper.title, &checked);
    }
    Ok(Done {
        paper: b.id.to_string(),
        runs,
        page: path,
        claims: checked,
    })
}

fn print_claims(title: &str, checked: &[Checked]) {
    crate::outln!("{title}");
    for c in checked {
        crate::outln!("  [{}] {} ({})", c.verdict.text(), c.claim, c.source);
        crate::outln!("      ours: {}; the paper's: {}", c.ours, c.paper);
        if !c.why.is_empty() {
            crate::outln!("      why: {}", c.why);
        }
    }
}
