//! The reproduction loop: for each paper, its suites measured (or their stored runs read back
//! with `from_runs`), its claims checked over their points, its page and each run's page
//! written, and the index over them all. The command line asks; this stage does the work, and
//! measures through the runner it is handed (the command's progress is the command's).

use std::path::PathBuf;

use super::error::Error;
use super::papers::BuiltIn;
use super::{page, Guests};
use crate::experiment::{file, matrix, run as erun};
use crate::records::{PointRecord, RunRef, RunRow};
use crate::reproduce::claims::Checked;
use crate::store::Store;
use crate::vocab::{Accel, Mode};

/// Which guests the suites run in, as asked: QEMU where the host runs it under KVM (`Auto`),
/// network namespaces, or QEMU even under TCG.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Want {
    Auto,
    Netns,
    Qemu,
}

/// What a reproduction is asked to do.
pub struct Ask {
    pub quick: bool,
    /// Measure nothing: read each suite's latest stored run.
    pub from_runs: bool,
    /// With `from_runs`: read a suite's newest run even if it did not finish.
    pub include_unfinished: bool,
    pub guests: Want,
    /// Print nothing but errors (the command prints one JSON document).
    pub quiet: bool,
    /// The store as the user named it (for messages).
    pub db: String,
    /// Where the pages go.
    pub out: PathBuf,
    /// Another machine as the client, over a real NIC.
    pub site: Option<erun::Site>,
}

/// Measures one loaded suite into the store (the command's runner, with its progress).
pub type Runner<'a> =
    dyn FnMut(&erun::Loaded, &Store) -> Result<erun::Outcome, crate::experiment::Error> + 'a;

/// Every paper of `papers`, in order, then the index over them.
pub fn reproduce(
    ask: &Ask,
    run: &mut Runner,
    store: &Store,
    papers: &[&BuiltIn],
) -> Result<Vec<Done>, Error> {
    let (mut done, mut host) = (Vec::new(), None);
    for b in papers {
        done.push(one(ask, run, store, b, &mut host)?);
    }
    let index: Vec<(String, String, Vec<Checked>)> = done
        .iter()
        .map(|d| (d.paper.clone(), d.paper.clone(), d.claims.clone()))
        .collect();
    crate::sys::file::replace(
        &ask.out.join("index.html"),
        page::index(&index).as_bytes(),
        0o644,
    )
    .map_err(|e| Error::Failed(format!("cannot write the index: {e}")))?;
    Ok(done)
}

/// The guests asked for, as this host can give them (probed once, on first need).
fn resolve(want: Want) -> Result<Guests, Error> {
    if want == Want::Netns {
        return Ok(Guests::Netns {
            why_not_qemu: "--guests netns asked for network namespaces".into(),
        });
    }
    let host = match crate::lab::vms::host_for(Mode::QemuVirtio) {
        Ok(h) => h,
        Err(e) if want == Want::Qemu => return Err(Error::Failed(format!("--guests qemu: {e}"))),
        Err(e) => {
            return Ok(Guests::Netns {
                why_not_qemu: format!("this host cannot run them ({e})"),
            })
        }
    };
    let vhost = std::path::Path::new("/dev/vhost-net").exists();
    match (host.accel, want) {
        (Accel::Kvm, _) | (_, Want::Qemu) => Ok(Guests::Qemu {
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
pub struct Done {
    pub paper: String,
    pub guests: Guests,
    pub runs: Vec<i64>,
    pub page: PathBuf,
    pub claims: Vec<Checked>,
    /// Points of the runs measured now that failed (each says why on its run's page).
    pub failed_points: usize,
}

/// The run of one of `b`'s suites: measured now, or the latest stored one (`--from-runs`; None
/// if none). A suite run in QEMU guests is stored under its name with `-qemu`.
fn suite_run(
    ask: &Ask,
    run: &mut Runner,
    store: &Store,
    b: &BuiltIn,
    text: &str,
    mut exp: file::ExperimentFile,
    guests: &Guests,
) -> Result<Option<(i64, usize)>, Error> {
    if matches!(guests, Guests::Qemu { .. }) {
        exp.name = format!("{}-qemu", exp.name);
    }
    if ask.from_runs {
        return Ok(readable(store, &exp.name, ask.include_unfinished, b.id)?.map(|id| (id, 0)));
    }
    if crate::sys::signals::stop_requested() {
        return Err(Error::Interrupted(
            "interrupted: no verdicts computed; the runs measured so far are stored".into(),
        ));
    }
    if !ask.quiet {
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
    if let Some(site) = &ask.site {
        site.mark(&mut loaded);
        loaded.site = Some(site.clone());
    }
    let outcome = run(&loaded, store)?;
    if outcome.status == crate::vocab::RunStatus::Interrupted {
        return Err(Error::Interrupted(format!(
            "interrupted: run {} ({}) is marked interrupted with its {} finished points; no verdicts computed (`reproduce --from-runs --include-unfinished` reads it anyway)",
            outcome.run_id, loaded.file.name, outcome.points_done
        )));
    }
    Ok(Some((outcome.run_id, outcome.points_failed)))
}

/// The newest run stored under `name` that a verdict may read: a complete one, unless
/// `unfinished` (then the newest of any status). Newer runs passed over are named on stderr.
fn readable(
    store: &Store,
    name: &str,
    unfinished: bool,
    paper: &str,
) -> Result<Option<i64>, Error> {
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

fn measure_hint(ask: &Ask, b: &BuiltIn) -> String {
    if ask.quick {
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
pub fn any_stored(ask: &Ask, store: &Store, papers: &[&BuiltIn]) -> Result<(), Error> {
    for b in papers {
        for t in b.suites(ask.quick) {
            if latest_stored(store, &file::parse(t, b.id)?)?.is_some() {
                return Ok(());
            }
        }
    }
    let which = if ask.quick { "quick" } else { "full" };
    Err(Error::Input(format!(
        "{} holds no run of the {which} suites of {}: {}",
        ask.db.clone(),
        papers.iter().map(|b| b.id).collect::<Vec<_>>().join(", "),
        if ask.quick {
            "run `vnetlab reproduce --quick` first, or pass the --db it stored into".to_string()
        } else {
            "run `vnetlab reproduce` first, or add --quick to read the quick suites' runs"
                .to_string()
        }
    )))
}

/// The newest stored run of a suite, in either kind of guest (a QEMU run is stored as NAME-qemu).
fn latest_stored(store: &Store, e: &file::ExperimentFile) -> Result<Option<i64>, Error> {
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
    ask: &Ask,
    suites: &[file::ExperimentFile],
    host: &mut Option<Guests>,
    store: &Store,
) -> Result<Guests, Error> {
    if let Some(why) = suites.iter().find_map(super::needs_netns) {
        return Ok(Guests::Netns {
            why_not_qemu: why.into(),
        });
    }
    if ask.from_runs {
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
        *host = Some(resolve(ask.guests)?);
    }
    Ok(host.clone().unwrap_or(Guests::Netns {
        why_not_qemu: String::new(),
    }))
}

/// One paper: its suites measured (or read back), its claims checked, its page and its runs'
/// pages written.
fn one(
    ask: &Ask,
    run: &mut Runner,
    store: &Store,
    b: &BuiltIn,
    host: &mut Option<Guests>,
) -> Result<Done, Error> {
    let texts = b.suites(ask.quick);
    let suites = texts
        .iter()
        .map(|t| file::parse(t, b.id))
        .collect::<Result<Vec<_>, _>>()?;
    let guests = guests_for(ask, &suites, host, store)?;
    let paper = guests.paper(super::parse(b.file, b.id)?);
    let (mut runs, mut missing) = (Vec::new(), Vec::new());
    let mut failed_points = 0;
    for (text, exp) in texts.iter().zip(suites) {
        let name = exp.name.clone();
        match suite_run(ask, run, store, b, text, guests.suite(exp), &guests)? {
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
            ask.db,
            measure_hint(ask, b)
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
        crate::report::write_page(&row, &pts, &ask.out.join(format!("run-{id}.html")))?;
        rows.push(row);
        points.extend(pts);
    }
    let checked = super::check_all(&paper, &points);
    let path = ask.out.join(format!("{}.html", b.id));
    let html = page::render(&paper, &points, &checked, &rows, &guests);
    crate::sys::file::replace(&path, html.as_bytes(), 0o644)
        .map_err(|e| Error::Failed(format!("cannot write {}: {e}", path.display())))?;
    if !ask.quiet {
        crate::outln!("{}", guests.text());
        page::claims_text(&paper.title, &checked);
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
