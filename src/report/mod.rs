//! Reports: one self-contained HTML page per run (paper 1's panels, latency, CPU parts, every
//! point with its spread, host facts), CLI tables, CSV export and run comparison. Reads only the
//! store's plain records.

pub mod capacity;
pub mod charts;
pub mod compare;
pub mod error;
pub mod export;
pub mod farm;
pub mod html;
pub mod iperf3;
pub mod openmetrics;
pub mod plan;
pub mod series;
pub mod table;
pub mod text;

pub use error::Error;

/// Writes a run's HTML page (its points and the capacity plan drawn from them) to `path`.
pub fn write_page(
    run: &crate::records::RunRow,
    pts: &[crate::records::PointRecord],
    path: &std::path::Path,
) -> Result<(), Error> {
    let page = html::page(run, pts, &capacity::sections(run, pts))?;
    crate::sys::file::replace(path, page.as_bytes(), 0o644).map_err(|e| {
        Error::Failed(format!(
            "cannot write {}: {e}",
            crate::text::clip(&path.display().to_string())
        ))
    })
}
