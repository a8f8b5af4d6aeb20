//! `vnetlab reproduce`: runs each paper's suite (quick or full), stores the run, checks the
//! paper's claims against it and writes one page per paper and an index; `--from-runs` re-renders
//! from the stored runs without measuring.

use clap::Args;
use std::path::PathBuf;

use super::exp_cmds::{execute, existing, output_dir};
use super::{need_root, print_json, CmdResult, Fail};
use crate::experiment::{file, matrix, run as erun};
use crate::records::{PointRecord, RunRef, RunRow};
use crate::reproduce::{self, claims::Checked, page, BuiltIn, Guests};
use crate::store::Store;
use crate::vocab::{Accel, Mode};

#[derive(Args)]
pub struct ReproduceArgs {
    /// The paper (its folder's name under experiments/papers/, e.g. xen-lro), or all
    #[arg(default_value = "all")]
    paper: String,
    /// Run the reduced grids (every paper's within 15 minutes on a 2-core host: about 14 here)
    #[arg(long)]
    quick: bool,
    /// The results store (SQLite); made if missing
    #[arg(long, default_value = "vnetlab.sqlite")]
    db: PathBuf,
    /// Make the store in --db even if it is an existing empty file
    #[arg(long)]
    create: bool,
    /// Where the pages go (one per paper, an index, and each run's full report)
    #[arg(long, default_value = "out")]
    out: PathBuf,
    /// Measure nothing: render the pages from the latest complete stored run of each suite
    #[arg(long)]
    from_runs: bool,
    /// With --from-runs: read a suite's newest run even if it was interrupted or never finished
    /// (by default such runs are named and passed over: a verdict from half a run is not one)
    #[arg(long, requires = "from_runs")]
    include_unfinished: bool,
    /// Which guests: auto (QEMU where the host runs it under KVM, else network namespaces),
    /// netns, or qemu (QEMU even under TCG, where every point is bound by the emulated CPU)
    #[arg(long, value_enum, default_value = "auto")]
    guests: GuestsArg,
    #[command(flatten)]
    site: super::exp_cmds::SiteArgs,
    /// One JSON document on stdout, for scripts
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, PartialEq, clap::ValueEnum)]
enum GuestsArg {
    Auto,
    Netns,
    Qemu,
}

/// The guests asked for, as this host can give them (probed once, on first need).
fn resolve(want: GuestsArg) -> Result<Guests, Fail> {
    if want == GuestsArg::Netns {
        return Ok(Guests::Netns {
            why_not_qemu: "--guests netns asked for network namespaces".into(),
        });
    }
    let host = match crate::lab::vms::host_for(Mode::QemuVirtio) {
        Ok(h) => h,
        Err(e) if want == GuestsArg::Qemu => return Err(Fail::Run(format!("--guests qemu: {e}"))),
        Err(e) => {
            return Ok(Guests::Netns {
                why_not_qemu: format!("this host cannot run them ({e})"),
            })
        }
    };
    let vhost = std::path::Path::new("/dev/vhost-net").exists();
    match (host.accel, want) {
        (Accel::Kvm, _) | (_, GuestsArg::Qemu) => Ok(Guests::Qemu {
            accel: host.accel.name().into(),
            vhost,
        }),
        _ => Ok(Guests::Netns {
            why_not_qemu: format!(
                "{}, and under TCG every point would be bound by the emulated guest CPU (--guests qemu runs them anyway)",
                host.why_not_kvm.unwrap_or_else(|| "no KVM".into())
            ),
        }),
    }
}

/// One paper's outcome.
#[derive(serde::Serialize)]
struct Done {
    paper: String,
    guests: Guests,
    runs: Vec<i64>,
    page: PathBuf,
    claims: Vec<Checked>,
    /// Points of the runs measured now that failed (each says why on its run's page).
    failed_points: usize,
}

pub fn reproduce(a: ReproduceArgs) -> CmdResult {
    let papers = reproduce::select(&a.paper)?;
    if !a.from_runs {
        need_root("vnetlab reproduce")?;
        // Refused before the first suite runs, not after it.
        a.site.site()?;
    } else if a.site.uplink.is_some() {
        return Err(Fail::Input(
            "--from-runs measures nothing: drop --uplink/--client".into(),
        ));
    }
    let store = if a.from_runs {
        let store = existing(&a.db)?;
        any_stored(&a, &store, &papers)?;
        store
    } else {
        Store::open(&a.db, a.create)?
    };
    output_dir(&a.out)?;
    let t0 = std::time::Instant::now();
    let (mut done, mut host) = (Vec::new(), None);
    crate::sys::signals::install();
    for b in papers {
        done.push(one(&a, &store, b, &mut host)?);
    }
    let index: Vec<(String, String, Vec<Checked>)> = done
        .iter()
        .map(|d| (d.paper.clone(), d.paper.clone(), d.claims.clone()))
        .collect();
    crate::sys::file::replace(
        &a.out.join("index.html"),
        page::index(&index).as_bytes(),
        0o644,
    )
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
    let failed: usize = done.iter().map(|d| d.failed_points).sum();
    if failed > 0 {
        return Err(Fail::Partial(format!(
            "{failed} point(s) failed (each run's page says why); the claims that read them are not measurable (exit {})",
            super::PARTIAL
        )));
    }
    Ok(())
}

/// The run of one of `b`'s suites: measured now, or the latest stored one (`--from-runs`; None
/// if none). A suite run in QEMU guests is stored under its name with `-qemu`.
fn suite_run(
    a: &ReproduceArgs,
    store: &Store,
    b: &BuiltIn,
    text: &str,
    mut exp: file::ExperimentFile,
    guests: &Guests,
) -> Result<Option<(i64, usize)>, Fail> {
    if matches!(guests, Guests::Qemu { .. }) {
        exp.name = format!("{}-qemu", exp.name);
    }
    if a.from_runs {
        return Ok(readable(store, &exp.name, a.include_unfinished, b.id)?.map(|id| (id, 0)));
    }
    if crate::sys::signals::stop_requested() {
        return Err(Fail::Interrupted(
            "interrupted: no verdicts computed; the runs measured so far are stored".into(),
        ));
    }
    if !a.json {
        crate::errln!(
            "{}: running {} ({} points)",
            b.id,
            exp.name,
            matrix::count(&exp)
        );
    }
    // The stored text says what ran: the suite's file names the netns datapaths it swapped.
    let text = match guests {
        Guests::Qemu { .. } => format!(
            "# run by `vnetlab reproduce` in QEMU guests as {}: {}\n{text}",
            exp.name,
            guests.text()
        ),
        Guests::Netns { .. } => text.to_string(),
    };
    let points = matrix::expand(&exp);
    let mut loaded = erun::Loaded::new(text, exp, points);
    if let Some(site) = a.site.site()? {
        site.mark(&mut loaded);
        loaded.site = Some(site);
    }
    let outcome = execute(&loaded, store, a.json)?;
    if outcome.status == crate::vocab::RunStatus::Interrupted {
        return Err(Fail::Interrupted(format!(
            "interrupted: run {} ({}) is marked interrupted with its {} finished points; no verdicts computed (`reproduce --from-runs --include-unfinished` reads it anyway)",
            outcome.run_id, loaded.file.name, outcome.points_done
        )));
    }
    Ok(Some((outcome.run_id, outcome.points_failed)))
}

/// The newest run stored under `name` that a verdict may read: a complete one, unless
/// `unfinished` (then the newest of any status). Newer runs passed over are named on stderr.
fn readable(store: &Store, name: &str, unfinished: bool, paper: &str) -> Result<Option<i64>, Fail> {
    let mut runs: Vec<RunRow> = store
        .runs()?
        .into_iter()
        .filter(|r| r.name == name)
        .collect();
    runs.sort_by_key(|r| std::cmp::Reverse(r.id));
    let pick = runs
        .iter()
        .position(|r| unfinished || r.status == crate::vocab::RunStatus::Complete);
    let passed = &runs[..pick.unwrap_or(runs.len())];
    if !passed.is_empty() {
        crate::errln!(
            "{paper}: passed over {} of {name} ({}): a verdict is read only from a complete run; --include-unfinished reads it",
            if passed.len() == 1 { "the newest run" } else { "newer runs" },
            passed
                .iter()
                .map(|r| format!("run {} {}", r.id, r.status.name()))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(pick.map(|i| runs[i].id))
}

fn measure_hint(a: &ReproduceArgs, b: &BuiltIn) -> String {
    if a.quick {
        format!("`vnetlab reproduce {} --quick` measures them", b.id)
    } else {
        format!(
            "`vnetlab reproduce {}` measures them, and --from-runs --quick reads the quick suites' runs",
            b.id
        )
    }
}

/// `--from-runs` over a store holding no run of any selected paper's suites is a mistake (the
/// wrong --db, or --quick missing): refused before a page is written.
fn any_stored(a: &ReproduceArgs, store: &Store, papers: &[&BuiltIn]) -> Result<(), Fail> {
    for b in papers {
        for t in b.suites(a.quick) {
            if latest_stored(store, &file::parse(t, b.id)?)?.is_some() {
                return Ok(());
            }
        }
    }
    let which = if a.quick { "quick" } else { "full" };
    Err(Fail::Input(format!(
        "{} holds no run of the {which} suites of {}: {}",
        crate::text::clip(&a.db.display().to_string()),
        papers.iter().map(|b| b.id).collect::<Vec<_>>().join(", "),
        if a.quick {
            "run `vnetlab reproduce --quick` first, or pass the --db it stored into".to_string()
        } else {
            "run `vnetlab reproduce` first, or add --quick to read the quick suites' runs"
                .to_string()
        }
    )))
}

/// The newest stored run of a suite, in either kind of guest (a QEMU run is stored as NAME-qemu).
fn latest_stored(store: &Store, e: &file::ExperimentFile) -> Result<Option<i64>, Fail> {
    let qemu = format!("{}-qemu", e.name);
    Ok(store
        .runs()?
        .into_iter()
        .filter(|r| r.name == e.name || r.name == qemu)
        .map(|r| r.id)
        .max())
}

/// The guests one paper's suites run in: netns if a suite measures vnetlab's own backend, else
/// the host's answer (asked once); with `--from-runs`, what its stored runs ran in.
fn guests_for(
    a: &ReproduceArgs,
    suites: &[file::ExperimentFile],
    host: &mut Option<Guests>,
    store: &Store,
) -> Result<Guests, Fail> {
    if let Some(why) = suites.iter().find_map(reproduce::needs_netns) {
        return Ok(Guests::Netns {
            why_not_qemu: why.into(),
        });
    }
    if a.from_runs {
        let mut modes = Vec::new();
        for id in suites
            .iter()
            .filter_map(|e| latest_stored(store, e).transpose())
        {
            modes.extend(store.points(id?)?.into_iter().map(|(_, p)| p.key.mode));
        }
        return Ok(Guests::of_stored(&modes));
    }
    if host.is_none() {
        *host = Some(resolve(a.guests)?);
    }
    Ok(host.clone().unwrap_or(Guests::Netns {
        why_not_qemu: String::new(),
    }))
}

fn one(
    a: &ReproduceArgs,
    store: &Store,
    b: &BuiltIn,
    host: &mut Option<Guests>,
) -> Result<Done, Fail> {
    let texts = b.suites(a.quick);
    let suites = texts
        .iter()
        .map(|t| file::parse(t, b.id))
        .collect::<Result<Vec<_>, _>>()?;
    let guests = guests_for(a, &suites, host, store)?;
    let paper = guests.paper(reproduce::parse(b.file, b.id)?);
    let (mut runs, mut missing) = (Vec::new(), Vec::new());
    let mut failed_points = 0;
    for (text, exp) in texts.iter().zip(suites) {
        let name = exp.name.clone();
        match suite_run(a, store, b, text, guests.suite(exp), &guests)? {
            Some((id, failed)) => {
                runs.push(id);
                failed_points += failed;
            }
            None => missing.push(name),
        }
    }
    if !missing.is_empty() {
        crate::errln!(
            "{}: no stored run of {} in {}, so the claims that read it are not measurable; {}",
            b.id,
            missing.join(", "),
            a.db.display(),
            measure_hint(a, b)
        );
    }
    let (mut rows, mut points): (Vec<RunRow>, Vec<PointRecord>) = (vec![], vec![]);
    for &id in &runs {
        let row = store.find_run(RunRef::Id(id))?;
        let mut pts = Vec::new();
        for (pid, mut p) in store.points(id)? {
            // The whole result, for what the checks read beyond the columns (window, largest
            // latency, LRO ratio).
            p.result = store.point_result(pid)?.map(Box::new);
            pts.push(p);
        }
        crate::report::write_page(&row, &pts, &a.out.join(format!("run-{id}.html")))?;
        rows.push(row);
        points.extend(pts);
    }
    let checked = reproduce::check_all(&paper, &points);
    let path = a.out.join(format!("{}.html", b.id));
    let html = page::render(&paper, &points, &checked, &rows, &guests);
    crate::sys::file::replace(&path, html.as_bytes(), 0o644)
        .map_err(|e| Fail::Run(format!("cannot write {}: {e}", path.display())))?;
    if !a.json {
        crate::outln!("{}", guests.text());
        crate::reproduce::page::claims_text(&paper.title, &checked);
    }
    Ok(Done {
        paper: b.id.to_string(),
        guests,
        runs,
        page: path,
        claims: checked,
        failed_points,
    })
}
