//! The experiment commands: run, report, runs, export, compare.

use clap::Args;
use std::path::{Path, PathBuf};

use super::fail::{CmdResult, Fail};
use super::shared::{need_lab_root, print_json};
use crate::experiment::{file, matrix, run as erun};
use crate::records::{PointRecord, RunRef};
use crate::report::{compare as rcompare, table};
use crate::store::Store;
use crate::vocab::RunStatus;

pub use super::shared::{existing, DbArgs, DEFAULT_DB};

/// The schema version of the JSON documents `run`, `report` and `compare` print (that of a
/// point's `Measured`: named fields throughout since 3).
const DOC_VERSION: u32 = crate::records::measured::VERSION;

#[derive(Args)]
pub struct RunArgs {
    /// The experiment file (TOML), e.g. experiments/quick.toml
    file: PathBuf,
    /// The results store; made if missing
    #[command(flatten)]
    db: DbArgs,
    /// Make the store in --db even if it is an existing empty file
    #[arg(long)]
    create: bool,
    /// Where the HTML report goes
    #[arg(long, default_value = "out")]
    out: PathBuf,
    /// Print the points without running them
    #[arg(long)]
    list: bool,
    /// Run a matrix of more than 100 000 points (at most 10 000 000)
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    site: SiteArgs,
    #[command(flatten)]
    farm: super::farm_cmds::FarmArgs,
    /// Rounds per point and when each stops, over the file's [point] rounds/confidence/iterations
    #[command(flatten)]
    stop: super::shared::StopArgs,
    /// Seconds the run may take: past every point's least rounds no round starts that would end
    /// after it, and each point says what its interval reached (over the file's [point] budget)
    #[arg(long, value_name = "SECONDS")]
    budget: Option<f64>,
    /// One JSON document on stdout, for scripts
    #[arg(long)]
    json: bool,
}

/// Two machines for a whole run: every lab takes the uplink and reaches the client machine
/// (as `vnetlab up --uplink … --client …` does for one lab).
#[derive(Args, Clone, Debug, Default)]
pub struct SiteArgs {
    /// An interface of this machine, a real NIC to the client machine, that each lab of the run
    /// takes as the wire's host end and gives back (needs --client)
    #[arg(long, value_name = "IFACE", requires = "client")]
    pub uplink: Option<String>,
    /// Take the uplink even though this machine's default route leaves through it
    #[arg(long, requires = "uplink")]
    pub force_uplink: bool,
    /// The client machine beyond the uplink: the lab's client address (10.213.0.2) and the port
    /// of its `vnetlab serve` [default port: 12866]
    #[arg(long, value_name = "HOST[:PORT]", requires = "uplink")]
    pub client: Option<String>,
    /// The token the client machine's `vnetlab serve` printed
    #[arg(long, requires = "client")]
    pub token: Option<String>,
    /// A file holding that token (its first line; not readable by others), instead of --token,
    /// which other users see in `ps`; VNETLAB_TOKEN in the environment is a third way
    #[arg(
        long,
        value_name = "FILE",
        requires = "client",
        conflicts_with = "token"
    )]
    pub token_file: Option<std::path::PathBuf>,
}

impl SiteArgs {
    /// The site, checked before a point runs: the uplink must be free and the client well formed.
    pub fn site(&self) -> Result<Option<erun::Site>, Fail> {
        let (Some(uplink), Some(client)) = (&self.uplink, &self.client) else {
            return Ok(None);
        };
        crate::lab::names::check_uplink_name(uplink)?;
        crate::lab::uplink::check(uplink, self.force_uplink)?;
        let token = super::shared::resolve_token(&self.token, &self.token_file)?;
        let client = crate::lab::topology::RemoteClient::parse(client, token)?;
        Ok(Some(erun::Site {
            uplink: uplink.clone(),
            client,
            force_uplink: self.force_uplink,
        }))
    }
}

/// Reads, checks and counts an experiment file, then expands it; refuses a matrix too large to
/// run before making a single point.
fn load(path: &Path, force: bool) -> Result<erun::Loaded, Fail> {
    let text = crate::text::read_capped(path, crate::text::MAX_FILE)?;
    let exp = file::parse(&text, &crate::text::clip(&path.display().to_string()))?;
    let n = matrix::count(&exp);
    if n > matrix::HARD_MAX {
        return Err(Fail::Input(format!("{}: the matrix has {n} points; vnetlab runs at most {}: split it into smaller experiments", exp.name, matrix::HARD_MAX)));
    }
    if n > matrix::MAX_POINTS && !force {
        return Err(Fail::Input(format!(
            "{}: the matrix has {n} points (over {}): pass --force to run it anyway, or split it",
            exp.name,
            matrix::MAX_POINTS
        )));
    }
    let points = matrix::expand(&exp);
    Ok(erun::Loaded::new(text, exp, points))
}

/// Whether an output path means standard output: `-` or /dev/stdout.
pub fn is_stdout(path: &Path) -> bool {
    path == Path::new("-") || path == Path::new("/dev/stdout")
}

use crate::sys::file::CONTROL_FS;

/// Refuses an output path that would write into the machine rather than a file: anywhere under
/// /proc, /sys or /dev (symlinks resolved), on a control file system, or an existing file that is
/// not a regular one (a device, a FIFO, a socket). Standard output is `-` (or /dev/stdout).
pub fn refuse_special(path: &Path, flag: &str) -> Result<(), Fail> {
    let name = crate::text::clip(&path.display().to_string());
    let bad = |why: &str| {
        Err(Fail::Input(format!(
            "{flag} {name}: {why}: give a file or folder of your own (standard output is -)"
        )))
    };
    let parent = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) => d.to_path_buf(),
        None => PathBuf::from("."),
    };
    let resolved = std::fs::canonicalize(path).or_else(|_| {
        std::fs::canonicalize(&parent).map(|d| d.join(path.file_name().unwrap_or_default()))
    });
    if let Ok(r) = &resolved {
        if ["/proc", "/sys", "/dev"].iter().any(|t| r.starts_with(t)) {
            return bad("that is the machine's own (proc, sys or a device), not a file");
        }
    }
    if let Ok(m) = std::fs::metadata(path) {
        if !m.is_file() && !m.is_dir() {
            return bad("it exists and is not a regular file (a device, a FIFO or a socket)");
        }
    }
    let folder = if path.is_dir() {
        path
    } else {
        parent.as_path()
    };
    match crate::sys::fs_magic(folder) {
        Ok(m) if CONTROL_FS.contains(&m) => bad("it is on a control file system of the kernel"),
        _ => Ok(()),
    }
}

/// A folder for the report: made if missing (its parent must exist: vnetlab makes no folder the
/// user did not name) and checked writable, before the first point runs. Whether it was made
/// here (`OutDir::undo` removes it again when the command is refused after all).
pub fn output_dir(dir: &Path) -> Result<OutDir, Fail> {
    refuse_special(dir, "--out")?;
    let name = crate::text::clip(&dir.display().to_string());
    let mut made = false;
    match std::fs::metadata(dir) {
        Ok(m) if !m.is_dir() => {
            return Err(Fail::Input(format!(
                "--out {name} is not a folder: give a folder for the HTML report"
            )))
        }
        Ok(_) => {}
        // Another run given the same folder may make it first: that is fine.
        Err(_) => match std::fs::create_dir(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => {}
            Ok(()) => made = true,
            Err(e) => {
                return Err(Fail::Input(format!(
                    "--out {name}: cannot make the folder ({e}); its parent must exist"
                )))
            }
        },
    }
    crate::sys::file::probe_writable(dir).map_err(|e| {
        Fail::Input(format!(
            "--out {name} is not writable ({e}): give another folder"
        ))
    })?;
    Ok(OutDir {
        path: dir.to_path_buf(),
        made,
    })
}

/// The report folder as `output_dir` left it.
pub struct OutDir {
    path: PathBuf,
    made: bool,
}

impl OutDir {
    /// Removes the folder if this command made it and it is still empty: a refused command
    /// leaves nothing behind.
    pub fn undo(&self) {
        if self.made {
            let _ = std::fs::remove_dir(&self.path);
        }
    }
}

/// A file vnetlab will write: its folder must exist, and the path must not be a folder nor
/// anything of the machine's own (`refuse_special`). Standard output (`-`) is fine.
pub fn output_file(path: &Path, flag: &str) -> Result<(), Fail> {
    if is_stdout(path) {
        return Ok(());
    }
    refuse_special(path, flag)?;
    let name = crate::text::clip(&path.display().to_string());
    if path.is_dir() {
        return Err(Fail::Input(format!(
            "{flag} {name} is a folder: give a file name"
        )));
    }
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) if !d.is_dir() => Err(Fail::Input(format!("{flag} {name}: the folder {} does not exist (vnetlab makes no folder you did not ask for)", crate::text::clip(&d.display().to_string())))),
        _ => Ok(()),
    }
}

/// Runs a loaded experiment into the store with a progress bar (a terminal) or a line per point.
pub fn execute(
    loaded: &erun::Loaded,
    outlet: &crate::experiment::outlet::Outlet,
    json: bool,
) -> Result<erun::Outcome, crate::experiment::Error> {
    let points = &loaded.points;
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr()) && !json;
    let bar = tty.then(|| {
        let b = indicatif::ProgressBar::new(points.len() as u64);
        let what = match loaded.stop.iterations.max {
            1 => "points",
            _ => "point-rounds at most",
        };
        b.set_style(
            indicatif::ProgressStyle::with_template(&format!(
                "{{bar:30}} {{pos}}/{{len}} {what}, {{msg}}"
            ))
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    });
    let mut last = usize::MAX;
    let mut progress = |done: usize, total: usize, left: f64, what: &str| {
        let eta = if left >= 60.0 {
            format!(
                "{:.0} min {:02.0} s left",
                (left / 60.0).floor(),
                left % 60.0
            )
        } else {
            format!("{left:.0} s left")
        };
        match &bar {
            Some(b) => {
                b.set_length(total as u64);
                b.set_position(done as u64);
                b.set_message(format!("{eta} · {}", what.trim()));
            }
            None if !json && done != last => {
                crate::errln!("[{done}/{total}] {eta} · {}", what.trim());
                last = done;
            }
            None => {}
        }
    };
    let outcome = erun::run_experiment(loaded, outlet, &mut progress)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(outcome)
}

pub fn run(a: RunArgs) -> CmdResult {
    let mut loaded = load(&a.file, a.force)?;
    if a.stop.given() {
        loaded.stop = a.stop.stopping(loaded.stop.iterations)?;
    }
    if let Some(b) = a.budget {
        if !(1.0..=7.0 * 86400.0).contains(&b) {
            return Err(Fail::Input(format!(
                "--budget {b}: give the run's seconds, 1 to 604800"
            )));
        }
        loaded.budget_s = Some(b);
    }
    if loaded.stop.iterations.max * loaded.file.point.repeat > 100 {
        return Err(Fail::Input(format!(
            "up to {} rounds of {} repeats: at most 100 repeats a point; lower --iterations",
            loaded.stop.iterations.max, loaded.file.point.repeat
        )));
    }
    if !a.list {
        if let Some(site) = a.site.site()? {
            site.mark(&mut loaded);
            loaded.site = Some(site);
        }
    }
    let (exp, points) = (&loaded.file, &loaded.points);
    if a.list {
        if a.json {
            print_json(points);
        } else {
            let it = loaded.stop.iterations;
            let secs: f64 =
                points.iter().map(matrix::estimate_round_s).sum::<f64>() * it.max as f64;
            let rounds = match (it.min, it.max, loaded.stop.goal) {
                (1, 1, _) => String::new(),
                (n, m, None) if n == m => format!(" in {n} rounds, the labs taken in turn"),
                (n, m, Some(g)) => {
                    format!(" in {n} to {m} rounds (the labs taken in turn) until {g}")
                }
                (n, m, None) => format!(" in {n} to {m} rounds, the labs taken in turn"),
            };
            crate::outln!(
                "{}: {} points{rounds}, about {:.0} s",
                exp.name,
                points.len(),
                secs
            );
            for p in points {
                crate::outln!("{}", matrix::describe(p));
            }
        }
        return Ok(());
    }
    need_lab_root("vnetlab run")?;
    let farm = a.farm.fleet()?;
    // One measurement at a time on the machine; a farm's run is skipped where the host lacks a
    // datapath, and goes after the labs an interrupted try left are gone.
    let what = match &farm {
        Some(f) => format!("run {} of host {}", f.run, f.host),
        None => "vnetlab run".into(),
    };
    let _machine = super::shared::hold_machine(&what, std::time::Duration::from_secs(a.farm.wait))?;
    if let Some(f) = &farm {
        super::farm_cmds::prepare(&loaded, f)?;
    }
    let out = output_dir(&a.out)?;
    let opened = a.db.write(a.create).inspect_err(|_| out.undo());
    let store = match (opened, &farm) {
        (Ok(s), _) => Ok(s),
        // A store that cannot be reached leaves a farm's run going into its spool.
        (Err(Fail::Run(why)), Some(_)) if a.farm.spool_root(&a.db).is_some() => Err(why),
        (Err(e), _) => return Err(e),
    };
    let eta: f64 = points.iter().map(matrix::estimate_s).sum();
    if eta > 24.0 * 3600.0 && !a.json {
        crate::errln!("vnetlab: note: {} points will take about {:.0} hours; Ctrl-C stops after the point under way and keeps what finished", points.len(), eta / 3600.0);
    }
    let outlet = erun::begin(
        &loaded,
        store.as_ref().map_err(Clone::clone),
        a.farm.spool_root(&a.db),
        farm.clone(),
    )?;
    super::farm_cmds::say_taken_up(&outlet, a.json);
    let outcome = execute(&loaded, &outlet, a.json)?;
    let store = match (&store, &outcome.delivery.store_away) {
        (Ok(s), None) => s,
        (_, away) => {
            return Err(super::farm_cmds::store_away(
                &outcome,
                away.as_deref().or(store.as_ref().err().map(String::as_str)),
                &a.db,
            ))
        }
    };
    let rrow = store.find_run(RunRef::Id(outcome.run_id))?;
    let pts: Vec<PointRecord> = store.points_whole(outcome.run_id)?;
    let html_path = a.out.join(format!("run-{}.html", outcome.run_id));
    crate::report::write_page(&rrow, &pts, &html_path)?;
    if a.json {
        print_json(
            &serde_json::json!({"version": DOC_VERSION, "run": rrow, "points": pts, "html": html_path}),
        );
    } else {
        crate::outln!(
            "run {} ({}): {} of {} points, {} failed, status {}",
            rrow.id,
            rrow.name,
            outcome.points_done,
            points.len(),
            outcome.points_failed,
            outcome.status
        );
        crate::out!("{}", table::summary(&pts));
        crate::outln!("report: {}", html_path.display());
    }
    if outcome.status == RunStatus::Interrupted {
        return Err(Fail::Interrupted(format!(
            "interrupted: {} finished points kept in {} (run {}, marked interrupted); its labs were removed",
            outcome.points_done,
            a.db.shown(),
            outcome.run_id
        )));
    }
    if outcome.points_failed > 0 {
        return Err(Fail::Partial(format!(
            "{} of {} points failed (each says why in the report); the others are stored in run {} (exit {})",
            outcome.points_failed,
            points.len(),
            outcome.run_id,
            super::fail::PARTIAL
        )));
    }
    Ok(())
}

#[derive(Args)]
pub struct ReportArgs {
    /// The run: its id, or latest
    #[arg(default_value = "latest", allow_hyphen_values = true)]
    run: RunRef,
    #[command(flatten)]
    db: DbArgs,
    /// Write the HTML report to this file
    #[arg(long)]
    html: Option<PathBuf>,
    /// One JSON document on stdout, for scripts
    #[arg(long)]
    json: bool,
    /// A farm: every host's run of this farm run id (`run --run-id`), hosts side by side per
    /// datapath, planned at paper 1's scenario (`plan --farm` sets the scenario)
    #[arg(long, value_name = "ID")]
    run_id: Option<String>,
}

pub fn report(a: ReportArgs) -> CmdResult {
    if let Some(h) = &a.html {
        output_file(h, "--html")?;
    }
    if let Some(id) = &a.run_id {
        return farm_report(&a, id);
    }
    let store = a.db.read()?;
    let r = store.find_run(a.run)?;
    // The page draws each point across its window from the whole stored result.
    let pts: Vec<PointRecord> = match &a.html {
        Some(_) => store.points_whole(r.id)?,
        None => store.points(r.id)?.into_iter().map(|(_, p)| p).collect(),
    };
    if let Some(h) = &a.html {
        if is_stdout(h) {
            if a.json {
                return Err(Fail::Input(
                    "--html - and --json both write to standard output: pick one".into(),
                ));
            }
            crate::out!(
                "{}",
                crate::report::html::page(&r, &pts, &crate::report::capacity::sections(&r, &pts))?
            );
            return Ok(());
        }
        crate::report::write_page(&r, &pts, h)?;
    }
    if a.json {
        print_json(&serde_json::json!({"version": DOC_VERSION, "run": r, "points": pts}));
    } else {
        crate::outln!(
            "run {} ({}){}, {}: {} of {} points",
            r.id,
            r.name,
            r.host
                .as_deref()
                .map(|h| format!(" on {h}"))
                .unwrap_or_default(),
            r.status,
            r.points,
            r.planned_points
        );
        crate::out!("{}", table::summary(&pts));
        if let Some(h) = &a.html {
            crate::outln!("report: {}", h.display());
        }
    }
    Ok(())
}

/// `report --run-id`: the farm's plan as text, JSON or a page.
fn farm_report(a: &ReportArgs, id: &str) -> CmdResult {
    let runs = super::farm_cmds::farm_runs(&a.db.read()?, id)?;
    let f = crate::capacity::farm::plan(id, &runs, crate::capacity::farm::Ask::paper1())?;
    match (&a.html, a.json) {
        (Some(h), true) if is_stdout(h) => Err(Fail::Input(
            "--html - and --json both write to standard output: pick one".into(),
        )),
        (Some(h), json) => {
            let page = crate::report::farm::page(&f)?;
            if is_stdout(h) {
                crate::out!("{page}");
                return Ok(());
            }
            crate::sys::file::replace(h, page.as_bytes(), 0o644)
                .map_err(|e| Fail::Input(format!("cannot write {}: {e}", h.display())))?;
            match json {
                true => print_json(&f),
                false => crate::outln!("report: {}", h.display()),
            }
            Ok(())
        }
        (None, true) => {
            print_json(&f);
            Ok(())
        }
        (None, false) => {
            crate::report::plan::farm(&f);
            Ok(())
        }
    }
}

#[derive(Args)]
pub struct RunsArgs {
    #[command(flatten)]
    db: DbArgs,
    /// One JSON document on stdout, for scripts
    #[arg(long)]
    json: bool,
}

/// The shape of `runs --json`: raised when a field changes meaning or goes away.
const RUNS_JSON_VERSION: u32 = 1;

/// `runs --json`: the stored runs, under the version of this document's shape.
#[derive(serde::Serialize)]
struct RunsDoc<'a> {
    version: u32,
    runs: &'a [crate::records::RunRow],
}

pub fn runs(a: RunsArgs) -> CmdResult {
    let store = a.db.read()?;
    let rows = store.runs()?;
    if a.json {
        print_json(&RunsDoc {
            version: RUNS_JSON_VERSION,
            runs: &rows,
        });
    } else if rows.is_empty() {
        crate::outln!("{} holds no runs", a.db.shown());
    } else {
        crate::out!("{}", table::runs(&rows));
    }
    Ok(())
}

#[derive(Args)]
pub struct ExportArgs {
    /// The run: its id, or latest
    #[arg(allow_hyphen_values = true)]
    run: RunRef,
    /// csv (a row per point), repeats-csv (a row per repeat), parts-csv (a row per CPU part) or
    /// openmetrics (for a fleet's Prometheus); JSON is `vnetlab report RUN --json`
    #[arg(long, value_parser = |s: &str| s.parse::<crate::report::export::Format>().map_err(|e| e.to_string()))]
    format: Option<crate::report::export::Format>,
    /// The same as --format csv
    #[arg(long, conflicts_with = "format")]
    csv: bool,
    #[command(flatten)]
    db: DbArgs,
    /// Write to this file instead of stdout
    #[arg(short = 'o', long)]
    output: Option<PathBuf>,
    /// openmetrics: every sample at the run's end, so `promtool tsdb create-blocks-from
    /// openmetrics` can backfill a stored run
    #[arg(long, conflicts_with = "textfile_dir")]
    timestamps: bool,
    /// openmetrics: write node_exporter textfiles in this folder instead, vnetlab_HOST.prom per
    /// host (atomically; no timestamps), for the run or, with --run-id, every host's run of a
    /// farm run, so the farm's monitoring sees each host's last result
    #[arg(long, value_name = "DIR", conflicts_with = "output")]
    textfile_dir: Option<PathBuf>,
    /// --textfile-dir: every host's run of this farm run id (the run argument is then ignored)
    #[arg(long, value_name = "ID", requires = "textfile_dir")]
    run_id: Option<String>,
}

pub fn export(a: ExportArgs) -> CmdResult {
    if let Some(dir) = &a.textfile_dir {
        return textfiles(&a, dir);
    }
    let format = match (a.format, a.csv) {
        (Some(f), _) => f,
        (None, true) => crate::report::export::Format::Csv,
        (None, false) => {
            return Err(Fail::Input(
                "say the format: --format csv, repeats-csv, parts-csv or openmetrics (JSON is `vnetlab report RUN --json`)".into(),
            ))
        }
    };
    if let Some(o) = &a.output {
        output_file(o, "-o")?;
    }
    let store = a.db.read()?;
    let r = store.find_run(a.run)?;
    let pts: Vec<PointRecord> = store.points(r.id)?.into_iter().map(|(_, p)| p).collect();
    let om = crate::report::openmetrics::Options {
        timestamps: a.timestamps,
        textfile: false,
    };
    let text = crate::report::export::export(format, &r, &pts, om);
    match &a.output {
        Some(p) if !is_stdout(p) => crate::sys::file::replace(p, text.as_bytes(), 0o644)
            .map_err(|e| Fail::Input(format!("cannot write {}: {e}", p.display())))?,
        _ => crate::out!("{text}"),
    }
    Ok(())
}

/// `export --textfile-dir`: a node_exporter textfile per host, each replaced atomically.
fn textfiles(a: &ExportArgs, dir: &Path) -> CmdResult {
    if !dir.is_dir() {
        return Err(Fail::Input(format!(
            "--textfile-dir {}: not a folder (node_exporter's --collector.textfile.directory)",
            dir.display()
        )));
    }
    let store = a.db.read()?;
    let runs = match &a.run_id {
        Some(id) => store.farm_runs(id)?,
        None => vec![store.find_run(a.run)?],
    };
    if runs.is_empty() {
        return Err(Fail::Input(format!(
            "the store holds no run of farm run id {}: `vnetlab runs` lists them",
            a.run_id.as_deref().unwrap_or_default()
        )));
    }
    let om = crate::report::openmetrics::Options {
        timestamps: false,
        textfile: true,
    };
    for r in runs {
        let pts: Vec<PointRecord> = store.points(r.id)?.into_iter().map(|(_, p)| p).collect();
        let host: String = r
            .host_label()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let path = dir.join(format!("vnetlab_{host}.prom"));
        let text = crate::report::openmetrics::render(&r, &pts, om);
        crate::sys::file::replace(&path, text.as_bytes(), 0o644)
            .map_err(|e| Fail::Run(format!("cannot write {}: {e}", path.display())))?;
        crate::outln!("{}", path.display());
    }
    Ok(())
}

#[derive(Args)]
pub struct MigrateArgs {
    /// The store to bring up to this vnetlab's schema (the readers never write)
    #[arg(long, default_value = DEFAULT_DB)]
    db: PathBuf,
    /// Make a store in --db if it is an existing empty file
    #[arg(long)]
    create: bool,
}

pub fn migrate(a: MigrateArgs) -> CmdResult {
    let name = crate::text::clip(&a.db.display().to_string());
    if !a.db.exists() {
        return Err(Fail::Input(format!(
            "no store at {name}: nothing to migrate"
        )));
    }
    Store::open(&a.db, a.create)?;
    crate::outln!("{name} is up to date");
    Ok(())
}

#[derive(Args)]
pub struct CompareArgs {
    run_a: RunRef,
    run_b: RunRef,
    #[command(flatten)]
    db: DbArgs,
    /// One JSON document on stdout, for scripts
    #[arg(long)]
    json: bool,
    /// Also write the two runs side by side as an HTML page (bars with whiskers, the table)
    #[arg(long)]
    html: Option<PathBuf>,
}

pub fn compare(a: CompareArgs) -> CmdResult {
    if let Some(h) = &a.html {
        output_file(h, "--html")?;
    }
    let store = a.db.read()?;
    let (ra, rb) = (store.find_run(a.run_a)?, store.find_run(a.run_b)?);
    let pa: Vec<PointRecord> = store.points(ra.id)?.into_iter().map(|(_, p)| p).collect();
    let pb: Vec<PointRecord> = store.points(rb.id)?.into_iter().map(|(_, p)| p).collect();
    let rows = rcompare::compare(&pa, &pb);
    if let Some(h) = &a.html {
        let page = rcompare::page(&ra, &rb, &rows)?;
        if is_stdout(h) {
            if a.json {
                return Err(Fail::Input(
                    "--html - and --json both write to standard output: pick one".into(),
                ));
            }
            crate::out!("{page}");
            return Ok(());
        }
        crate::sys::file::replace(h, page.as_bytes(), 0o644).map_err(|e| {
            Fail::Run(format!(
                "cannot write {}: {e}",
                crate::text::clip(&h.display().to_string())
            ))
        })?;
    }
    if a.json {
        print_json(
            &serde_json::json!({"version": DOC_VERSION, "a": ra.id, "b": rb.id, "a_host": ra.host, "b_host": rb.host, "rows": rows}),
        );
        return Ok(());
    }
    if rows.is_empty() {
        crate::outln!(
            "runs {} and {} share no points (same mode, test, size, direction, offloads, wire)",
            ra.id,
            rb.id
        );
        return Ok(());
    }
    let on = |r: &crate::records::RunRow| {
        r.host
            .as_deref()
            .map(|h| format!(" on {h}"))
            .unwrap_or_default()
    };
    crate::outln!("B = run {}{}, A = run {}{}; median [95 % confidence interval]; ratio = B ÷ A of the medians; * = each outside the other's interval, ? = no interval (single runs), ! = an interval wider than asked", rb.id, on(&rb), ra.id, on(&ra));
    crate::outln!(
        "{:<78} {:>24} {:>24} {:>9} {:>11}",
        "point",
        "A",
        "B",
        "ratio",
        "CPU/Gb ×"
    );
    for r in rows {
        let mark = |s: Option<bool>| match s {
            Some(true) => "*",
            Some(false) => "",
            None => "?",
        };
        let o = |v: Option<f64>, p: usize| v.map(|x| format!("{x:.p$}")).unwrap_or("-".into());
        let with = |v: Option<f64>, r: Option<[f64; 2]>| match r {
            Some([lo, hi]) => format!("{} [{lo:.3}–{hi:.3}]", o(v, 3)),
            None => o(v, 3),
        };
        let flag = if r.wide { "!" } else { "" };
        crate::outln!(
            "{:<78} {:>24} {:>24} {:>7}{:1}{flag:1} {:>10}{:1}",
            r.key,
            with(r.a, r.range_a),
            with(r.b, r.range_b),
            o(r.ratio, 3),
            mark(r.significant),
            o(r.cpu_ratio, 3),
            mark(r.cpu_significant),
        );
    }
    Ok(())
}
