//! A claim reads what the paper's sentence says: its quote is in the paper's text at the line
//! it names, every number it gives (the paper's sizes, its bound, its threshold) comes from the
//! quote, and a claim of the paper's own uses a word of its kind. Checked against the papers'
//! texts where they are beside the checkout (`VNETLAB_PAPERS`).

use super::claim::{Claim, Kind, Origin, Quote};

/// Words that say each kind of claim: a paper's claim quotes a sentence holding one.
fn words(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Lowest => &[
            "least", "lowest", "less", "slowest", "lower", "fewer", "minimum", "smallest", "reduc",
            "save",
        ],
        Kind::Highest => &[
            "highest", "fastest", "most", "best", "maximum", "largest", "more", "higher",
        ],
        Kind::Greater => &[
            "more", "higher", "greater", "faster", "exceed", "times", "less", "lower", "fewer",
            "reduc", "save", "cost", "rise", "increase", "drop", "decrease",
        ],
        Kind::Near => &[
            "near",
            "nearly",
            "same",
            "approximately",
            "close",
            "within",
            "comparable",
            "similar",
            "equal",
            "untouched",
            "little",
        ],
        Kind::Above => &["more than", "over", "exceed", "above", "beyond"],
    }
}

/// Runs of whitespace as one space.
fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether the quote's text is in `paper` from its line on (it may run onto four more lines).
pub fn found(paper: &str, q: &Quote) -> bool {
    let from = (q.line as usize).saturating_sub(1);
    let lines: Vec<&str> = paper.lines().skip(from).take(5).collect();
    q.line > 0 && collapse(&lines.join(" ")).contains(&collapse(&q.text))
}

/// A number the text prints, and whether a percent sign (or "percent") follows it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Number {
    value: f64,
    percent: bool,
}

/// The numbers a text prints: digits with thousands' commas and one decimal point.
fn numbers(s: &str) -> Vec<Number> {
    let b = s.as_bytes();
    let (mut out, mut i) = (Vec::new(), 0);
    while i < b.len() {
        if !b[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len()
            && (b[i].is_ascii_digit()
                || (matches!(b[i], b'.' | b',') && b.get(i + 1).is_some_and(u8::is_ascii_digit)))
        {
            i += 1;
        }
        let text: String = s[start..i].chars().filter(|c| *c != ',').collect();
        let rest = s[i..].trim_start();
        if let Ok(value) = text.parse::<f64>() {
            let percent = rest.starts_with('%') || rest.starts_with("percent");
            out.push(Number { value, percent });
        }
    }
    out
}

/// Whether `x` is within 1 % of `y`.
fn close(x: f64, y: f64) -> bool {
    (x - y).abs() <= 0.01 * y.abs()
}

/// Whether `x` comes from the printed numbers: one of them (in Mb/s or Gb/s: a thousandth or a
/// thousand times it); a percentage as 1 + p, 1 - p, 1 / (1 - p) or p; or the ratio of two.
fn derivable(x: f64, printed: &[Number]) -> bool {
    let nums: Vec<Number> = printed
        .iter()
        .flat_map(|n| {
            [1.0, 1e-3, 1e3].map(|k| Number {
                value: n.value * k,
                percent: n.percent && k == 1.0,
            })
        })
        .collect();
    let from_one = nums.iter().any(|n| {
        let p = n.value / 100.0;
        close(n.value, x)
            || n.percent
                && [1.0 + p, 1.0 - p, 1.0 / (1.0 - p), p]
                    .iter()
                    .any(|d| close(*d, x))
    });
    let from_two = nums.iter().enumerate().any(|(i, a)| {
        nums.iter()
            .enumerate()
            .any(|(j, b)| i != j && b.value > 0.0 && close(a.value / b.value, x))
    });
    from_one || from_two
}

/// The digits of a text, nothing else.
fn digits(s: &str) -> String {
    s.chars().filter(char::is_ascii_digit).collect()
}

/// What the check reads of a quote: its reading where the text is OCR-damaged (each of whose
/// numbers must be the text's digits), else its text.
fn read(q: &Quote) -> Result<&str, String> {
    let Some(r) = &q.reads else {
        return Ok(&q.text);
    };
    let text = digits(&q.text);
    match numbers(r)
        .iter()
        .map(|n| digits(&format!("{}", n.value)))
        .find(|d| !text.contains(d.trim_start_matches('0')))
    {
        Some(d) => Err(format!("its reading's {d} is not among the quote's digits")),
        None => Ok(r),
    }
}

/// Why a claim does not read what its quotes say, if it does not: each quote in `paper`, each
/// of its numbers derivable from them, a word of its kind in a claim of the paper's own.
pub fn check(c: &Claim, paper: &str) -> Result<(), String> {
    if let Some(q) = c.quote.iter().find(|q| !found(paper, q)) {
        return Err(format!("'{}' is not at line {}", q.text, q.line));
    }
    let read: Vec<&str> = c.quote.iter().map(read).collect::<Result<_, _>>()?;
    let nums: Vec<Number> = read.iter().flat_map(|r| numbers(r)).collect();
    let given = c
        .paper_ratio
        .iter()
        .chain(c.sizes.iter().flatten())
        .chain(&c.value)
        .chain(&c.by_given);
    // "As well as native" is a ratio of 1 whatever the sentence prints.
    let even = |x: f64| c.kind == Kind::Near && x == 1.0;
    if let Some(x) = given.copied().find(|x| !even(*x) && !derivable(*x, &nums)) {
        return Err(format!("{x} comes from no number its quotes print"));
    }
    let all = read.join(" ").to_lowercase();
    if c.origin == Origin::Paper && !words(c.kind).iter().any(|w| all.contains(w)) {
        return Err(format!(
            "its quotes say no word of a {:?} claim ({})",
            c.kind,
            words(c.kind).join(", ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quote(line: u32, text: &str, reads: Option<&str>) -> Quote {
        Quote {
            line,
            text: text.into(),
            reads: reads.map(String::from),
        }
    }

    #[test]
    fn numbers_read_commas_points_and_percents() {
        let n = numbers("6,268,246 cycles; 18% fewer, 0.56 and 2.19 (v1.2.)");
        let v: Vec<(f64, bool)> = n.iter().map(|n| (n.value, n.percent)).collect();
        assert_eq!(
            v,
            [
                (6268246.0, false),
                (18.0, true),
                (0.56, false),
                (2.19, false),
                (1.2, false)
            ]
        );
    }

    #[test]
    fn a_size_comes_from_a_number_a_percentage_or_a_ratio() {
        let n = numbers("0.56 / 2.19 / 2.95, 24% more, 92% of native");
        assert!(derivable(3.91, &n)); // 2.19 / 0.56
        assert!(derivable(5.27, &n)); // 2.95 / 0.56
        assert!(derivable(1.24, &n)); // 1 + 24 %
        assert!(derivable(0.92, &n)); // 92 %
        assert!(derivable(2.19, &n));
        assert!(!derivable(1.62, &n));
        assert!(!derivable(0.25, &n));
    }

    #[test]
    fn a_quote_is_found_across_line_ends_but_not_elsewhere() {
        let paper = "one\nthe virtual driver\nsends  near native\nfour\n";
        assert!(found(paper, &quote(2, "driver sends near", None)));
        assert!(!found(paper, &quote(3, "driver sends near", None)));
        assert!(!found(paper, &quote(0, "one", None)));
    }

    #[test]
    fn every_claim_reads_what_its_quoted_sentence_says() {
        let Some(dir) = crate::reproduce::papers::texts_dir() else {
            eprintln!("the papers' texts are not beside the checkout: set VNETLAB_PAPERS");
            return;
        };
        for b in crate::reproduce::papers() {
            let p = crate::reproduce::parse(b.file, b.id).unwrap_or_else(|e| panic!("{e}"));
            let text = std::fs::read(dir.join(&p.text)).unwrap_or_else(|e| panic!("{e}"));
            let text = String::from_utf8_lossy(&text);
            for c in &p.claims {
                if let Err(e) = check(c, &text) {
                    panic!("{}: claim '{}': {e}", p.paper, c.text);
                }
            }
        }
    }

    #[test]
    fn a_quote_that_says_another_number_or_kind_is_refused() {
        let b = crate::reproduce::find("icsnc2013").unwrap();
        let p = crate::reproduce::parse(b.file, b.id).unwrap();
        let mut c = p
            .claims
            .iter()
            .find(|c| c.origin == Origin::Paper)
            .unwrap()
            .clone();
        let text = "0.56 and 2.19 of it\nmore: 0.56, 2.19\n";
        c.quote = vec![quote(1, "0.56 and 2.19 of it", None)];
        c.sizes = None;
        c.paper_ratio = Some(1.5);
        assert!(check(&c, text).unwrap_err().contains("1.5"));
        c.paper_ratio = Some(3.91);
        c.kind = Kind::Greater;
        assert!(check(&c, text).unwrap_err().contains("no word"));
        c.quote = vec![quote(2, "more: 0.56, 2.19", None)];
        c.quote.push(quote(9, "more", None));
        assert!(check(&c, text).unwrap_err().contains("not at line 9"));
        c.quote.pop();
        assert_eq!(check(&c, text), Ok(()));
    }

    #[test]
    fn a_reading_must_be_the_damaged_texts_digits() {
        assert!(read(&quote(1, "694. 578 |", Some("694.578 Mb/s"))).is_ok());
        assert!(read(&quote(1, "694. 578 |", Some("649.578 Mb/s"))).is_err());
    }
}
