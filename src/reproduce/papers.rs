//! The built-in papers: one per folder of `experiments/papers/` (`paper.toml`, `suites.toml` and
//! the experiment files it names), embedded by `build.rs` and listed in the order each folder's
//! `suites.toml` gives. A new paper is a new folder; nothing here names one.

use serde::Deserialize;
use std::sync::OnceLock;

include!(concat!(env!("OUT_DIR"), "/papers.rs"));

/// A built-in paper: its id (its folder), its claims file, and its suites (quick, full) as
/// experiment files; its claims are checked over the points of all of a grid's runs together.
#[derive(Debug)]
pub struct BuiltIn {
    pub id: &'static str,
    pub file: &'static str,
    pub quick: Vec<&'static str>,
    pub full: Vec<&'static str>,
    order: u32,
}

impl BuiltIn {
    /// The experiment files of its quick or its full grid.
    pub fn suites(&self, quick: bool) -> &[&'static str] {
        if quick {
            &self.quick
        } else {
            &self.full
        }
    }
}

/// A paper folder's `suites.toml`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Suites {
    /// Where the paper stands among the others (pages, `reproduce all`).
    order: u32,
    quick: Vec<String>,
    full: Vec<String>,
}

/// One folder's paper; its files were checked when vnetlab was built (build.rs), so a missing
/// one is a bug of the build, not of the user's input.
fn load(id: &'static str, files: &'static [(&'static str, &'static str)]) -> BuiltIn {
    let text = |name: &str| -> &'static str {
        files
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| *t)
            .unwrap_or_else(|| panic!("experiments/papers/{id}/{name} was not embedded"))
    };
    let s: Suites = toml::from_str(text("suites.toml"))
        .unwrap_or_else(|e| panic!("experiments/papers/{id}/suites.toml: {e}"));
    BuiltIn {
        id,
        file: text("paper.toml"),
        quick: s.quick.iter().map(|n| text(n)).collect(),
        full: s.full.iter().map(|n| text(n)).collect(),
        order: s.order,
    }
}

/// Every built-in paper, in order.
pub fn papers() -> &'static [BuiltIn] {
    static P: OnceLock<Vec<BuiltIn>> = OnceLock::new();
    P.get_or_init(|| {
        let mut v: Vec<BuiltIn> = PAPER_DIRS.iter().map(|(id, f)| load(id, f)).collect();
        v.sort_by_key(|b| (b.order, b.id));
        v
    })
}

/// The paper of that id.
pub fn find(id: &str) -> Option<&'static BuiltIn> {
    papers().iter().find(|p| p.id == id)
}

/// How many papers, as a word for the pages ("four").
pub fn count_word() -> String {
    const WORDS: [&str; 10] = [
        "no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    ];
    let n = papers().len();
    WORDS
        .get(n)
        .map_or_else(|| n.to_string(), |w| w.to_string())
}

/// Where the papers' texts are, for the tests that read them: `VNETLAB_PAPERS`, else the shared
/// folder beside the checkout; None where neither is there.
#[cfg(test)]
pub fn texts_dir() -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("VNETLAB_PAPERS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/papers")
        });
    dir.is_dir().then_some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_folder_is_a_paper_with_its_suites_in_order() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/papers");
        let folders = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| e.path().is_dir())
            .count();
        assert_eq!(papers().len(), folders);
        let orders: Vec<u32> = papers().iter().map(|p| p.order).collect();
        assert!(orders.windows(2).all(|w| w[0] < w[1]), "{orders:?}");
        for p in papers() {
            assert!(!p.quick.is_empty() && !p.full.is_empty(), "{}", p.id);
            assert!(find(p.id).is_some_and(|q| std::ptr::eq(p, q)));
        }
    }
}
