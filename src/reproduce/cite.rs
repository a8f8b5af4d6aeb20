//! Citations: every `source` of a paper file (and every slip and left-out item) cites the
//! paper's figures, tables, sections and equations by the ids its `[[item]]`s declare, each
//! item printed by the paper's text at the line it names; and every figure and table of the
//! paper is covered by a value, claim or figure, or listed as left out.

use super::error::Error;
use super::file::{Item, Paper};

/// How a citation begins, and how it must not (a plural or a spelled-out word hides which item
/// is meant).
const KINDS: [&str; 4] = ["Fig. ", "Table ", "Sec. ", "Eq. ("];
const REFUSED: [(&str, &str); 5] = [
    ("Figs.", "cite each figure as Fig. N"),
    ("Figure ", "write Fig. N"),
    ("Tables ", "cite each table as Table N"),
    ("Secs.", "cite each section as Sec. N"),
    ("Section ", "write Sec. N"),
];

/// The items a text cites, as ids ("Fig. 4(c)", "Table IV", "Sec. IV-B", "Eq. (5)"), or why a
/// citation cannot be read.
pub fn cites(text: &str) -> Result<Vec<String>, Error> {
    if let Some((_, fix)) = REFUSED.iter().find(|(bad, _)| text.contains(bad)) {
        return Err(Error::Input(format!(
            "'{}': {fix}",
            crate::text::clip(text)
        )));
    }
    let mut out = Vec::new();
    for kind in KINDS {
        let mut from = 0;
        while let Some(at) = text[from..].find(kind) {
            let start = from + at;
            let id_end = start + kind.len() + id_len(kind, &text[start + kind.len()..]);
            if id_end == start + kind.len() {
                return Err(Error::Input(format!(
                    "'{}': '{}' names no item",
                    crate::text::clip(text),
                    kind.trim()
                )));
            }
            out.push(text[start..id_end].to_string());
            from = id_end;
        }
    }
    Ok(out)
}

/// The length of the id after a citation's kind: "4(c)" after "Fig. ", "IV" after "Table ",
/// "IV-B" or "3.3.2" after "Sec. ", "5)" after "Eq. (".
fn id_len(kind: &str, rest: &str) -> usize {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '.';
    let mut n = rest.find(|c: char| !word(c)).unwrap_or(rest.len());
    // A sentence's full stop or a range's dash is not part of the id.
    while n > 0 && matches!(rest.as_bytes()[n - 1], b'.' | b'-') {
        n -= 1;
    }
    match kind {
        "Eq. (" => rest.find(')').map_or(0, |i| i + 1),
        "Fig. " => {
            // A sub-figure: "4(c)".
            let tail = &rest[n..];
            match tail.strip_prefix('(') {
                Some(t) if n > 0 && t.len() >= 2 && t.as_bytes()[1] == b')' => n + 3,
                _ => n,
            }
        }
        _ => n,
    }
}

/// Every source of `p` cites only items `p` declares, and every figure and table it declares is
/// cited by a value, claim, figure or plan, or listed as left out.
pub fn check(p: &Paper) -> Result<(), Error> {
    let bad = |e: String| Error::Input(e);
    let declared = |id: &str| p.items.iter().any(|i| i.id == id);
    let mut ids = std::collections::HashSet::new();
    for i in &p.items {
        if cites(&i.id)? != [i.id.clone()] {
            return Err(bad(format!(
                "item '{}': an id is one citation, as Fig. 4(c), Table IV, Sec. IV-B or Eq. (5)",
                i.id
            )));
        }
        if !ids.insert(&i.id) || i.printed.trim().is_empty() || i.line == 0 {
            return Err(bad(format!(
                "item '{}': declare each item once, with what the text prints and its line",
                i.id
            )));
        }
    }
    let mut covered = Vec::new();
    for (what, text, covers) in sources(p) {
        for id in cites(text).map_err(|e| bad(format!("{what}: {e}")))? {
            if !declared(&id) {
                return Err(bad(format!(
                    "{what} cites {id}, which is not among the paper's items: declare it with the line that prints it, or cite what the paper has"
                )));
            }
            if covers {
                covered.push(id);
            }
        }
    }
    let is_covered = |i: &Item| covered.iter().any(|c| *c == i.id || parent(c) == i.id);
    match p.items.iter().find(|i| top_level(&i.id) && !is_covered(i)) {
        Some(i) => Err(bad(format!(
            "{} ('{}') is neither read by a value, claim or figure nor listed in left_out with why",
            i.id, i.printed
        ))),
        None => Ok(()),
    }
}

/// Whether an id is a whole figure or table (its sub-figures are covered with it).
fn top_level(id: &str) -> bool {
    (id.starts_with("Fig. ") || id.starts_with("Table ")) && !id.contains('(')
}

/// "Fig. 4" of "Fig. 4(c)".
fn parent(id: &str) -> &str {
    id.split('(').next().unwrap_or(id)
}

/// Every citing text of a paper file: what it is (for errors), the text, and whether it covers
/// what it cites (slips cite without covering).
fn sources(p: &Paper) -> Vec<(String, &str, bool)> {
    let mut v: Vec<(String, &str, bool)> = Vec::new();
    for x in &p.values {
        v.push((format!("value '{}'", x.quantity), &x.source, true));
    }
    // A claim beyond the paper names the paper's nearest item without reproducing it.
    for c in &p.claims {
        let covers = c.origin != super::claims::Origin::Beyond;
        v.push((format!("claim '{}'", c.text), &c.source, covers));
    }
    for f in &p.figures {
        v.push((format!("figure '{}'", f.title), &f.source, true));
        v.push((format!("figure '{}'", f.title), &f.title, true));
    }
    if let Some(t) = &p.plan {
        v.push(("the plan".into(), &t.source, true));
    }
    for l in &p.left_out {
        v.push((format!("left out '{}'", l.item), &l.item, true));
    }
    for s in &p.slips {
        v.push((format!("slip at '{}'", s.at), &s.at, false));
    }
    v
}

/// Whitespace folded to single spaces.
fn folded(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `text` prints `item` where it says: its caption within four lines of its line.
pub fn printed_at(text: &str, item: &Item) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    let at = item.line as usize;
    let from = at.saturating_sub(3).max(1);
    let to = (at + 4).min(lines.len());
    if from > to {
        return false;
    }
    folded(&lines[from - 1..to].join(" ")).contains(&folded(&item.printed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    #[test]
    fn citations_are_read_as_ids_and_plurals_are_refused() {
        let c = cites("Fig. 4(c) and Table IV; Sec. IV-B, Eq. (5).").unwrap();
        assert_eq!(c, ["Fig. 4(c)", "Table IV", "Sec. IV-B", "Eq. (5)"]);
        assert_eq!(cites("Sec. 3.3.2 (network)").unwrap(), ["Sec. 3.3.2"]);
        assert_eq!(cites("Fig. 12, guest sends").unwrap(), ["Fig. 12"]);
        assert_eq!(cites("Table 2.").unwrap(), ["Table 2"]);
        assert!(cites("no citation").unwrap().is_empty());
        for bad in ["Figs. 3-5", "Figure 2", "Section IV"] {
            assert!(cites(bad).is_err(), "{bad}");
        }
        assert_eq!(cites("Sec. 5.1").unwrap(), ["Sec. 5.1"]);
        assert!(cites("see Fig. (a)").is_err());
    }

    #[test]
    fn every_paper_files_citations_are_items_its_text_prints() {
        for b in super::super::papers() {
            let p = super::super::parse(b.file, b.id).unwrap_or_else(|e| panic!("{e}"));
            check(&p).unwrap();
            let Some(dir) = super::super::papers::texts_dir() else {
                // The declared items are still checked above; their text is not here to read.
                eprintln!("the papers' texts are not beside the checkout: set VNETLAB_PAPERS");
                continue;
            };
            let text =
                std::fs::read(dir.join(&p.text)).unwrap_or_else(|e| panic!("{}: {e}", p.text));
            assert_eq!(
                format!("{:x}", Sha256::digest(&text)),
                p.text_sha256,
                "{}: another text than the items were read from",
                p.text
            );
            let text = String::from_utf8_lossy(&text);
            for i in &p.items {
                assert!(
                    printed_at(&text, i),
                    "{}: {} is not printed as '{}' near line {}",
                    p.text,
                    i.id,
                    i.printed,
                    i.line
                );
            }
        }
    }

    #[test]
    fn a_file_citing_what_its_paper_lacks_is_refused() {
        let b = super::super::find("icsnc2013").unwrap();
        let mut p = super::super::parse(b.file, b.id).unwrap();
        p.claims[0].source = "Fig. 99".into();
        let e = check(&p).unwrap_err().to_string();
        assert!(e.contains("cites Fig. 99"), "{e}");
        let mut p = super::super::parse(b.file, b.id).unwrap();
        let fig = p.items.iter().find(|i| top_level(&i.id)).cloned().unwrap();
        // Nothing reads it and nothing says why it is left out: refused, naming it.
        p.values.retain(|v| !v.source.contains(&fig.id));
        p.claims.retain(|c| !c.source.contains(&fig.id));
        p.figures
            .retain(|f| !f.source.contains(&fig.id) && !f.title.contains(&fig.id));
        p.left_out.retain(|l| !l.item.contains(&fig.id));
        if p.plan.as_ref().is_some_and(|t| t.source.contains(&fig.id)) {
            p.plan = None;
        }
        let e = check(&p).unwrap_err().to_string();
        assert!(e.contains(&fig.id) && e.contains("left_out"), "{e}");
        // An item the text does not print where it says is caught by the text check.
        let item = Item {
            id: "Fig. 1".into(),
            printed: "Software Emulation of vNIC".into(),
            line: 3,
        };
        let text = "a\nb\nc\nd\ne\nf\ng\nh\nFig. 1. Software Emulation\nof vNIC\n";
        assert!(!printed_at(text, &item));
        assert!(printed_at(text, &Item { line: 9, ..item }));
    }
}
