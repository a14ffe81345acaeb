//! The window's languages: one table of text keys per language (`en.rs`, `fr.rs`, `zh.rs`,
//! `ja.rs`, `es.rs`), the choice from the cookie or `Accept-Language`, and numbers and dates
//! written as each locale writes them (a small formatter, no ICU).
//!
//! A unit test fails when a key is missing in any language, or when the code uses a key the
//! English table lacks.

mod en;
mod es;
mod fr;
mod ja;
mod zh;

use std::collections::HashMap;
use std::sync::OnceLock;

use chrono::{Datelike, TimeZone, Timelike};

/// A language of the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lang {
    /// English.
    En,
    /// French.
    Fr,
    /// Chinese (simplified).
    Zh,
    /// Japanese.
    Ja,
    /// Spanish.
    Es,
}

impl Lang {
    /// Every language, in the order the switch lists them.
    pub const ALL: [Lang; 5] = [Lang::En, Lang::Fr, Lang::Es, Lang::Zh, Lang::Ja];

    /// The code the cookie and the switch use.
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Fr => "fr",
            Lang::Zh => "zh",
            Lang::Ja => "ja",
            Lang::Es => "es",
        }
    }

    /// The `lang` attribute of the page.
    pub fn html_lang(self) -> &'static str {
        match self {
            Lang::Zh => "zh-Hans",
            other => other.code(),
        }
    }

    /// The language's own name.
    pub fn name(self) -> &'static str {
        match self {
            Lang::En => "English",
            Lang::Fr => "Français",
            Lang::Zh => "简体中文",
            Lang::Ja => "日本語",
            Lang::Es => "Español",
        }
    }

    /// A language by its code (`ja`, `zh-CN`, `fr-CA`: the primary subtag decides).
    pub fn from_code(code: &str) -> Option<Lang> {
        let primary = code.trim().split(['-', '_']).next()?.to_ascii_lowercase();
        match primary.as_str() {
            "en" => Some(Lang::En),
            "fr" => Some(Lang::Fr),
            "zh" => Some(Lang::Zh),
            "ja" => Some(Lang::Ja),
            "es" => Some(Lang::Es),
            _ => None,
        }
    }

    /// The best language of an `Accept-Language` header (highest `q` first, then order).
    pub fn from_accept_language(header: &str) -> Option<Lang> {
        let mut best: Option<(f32, usize, Lang)> = None;
        for (i, part) in header.split(',').enumerate() {
            let mut it = part.split(';');
            let tag = it.next().unwrap_or("");
            let q = it
                .find_map(|p| p.trim().strip_prefix("q="))
                .and_then(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            let Some(lang) = Lang::from_code(tag) else {
                continue;
            };
            if q <= 0.0 {
                continue;
            }
            if best.is_none_or(|(bq, bi, _)| q > bq || (q == bq && i < bi)) {
                best = Some((q, i, lang));
            }
        }
        best.map(|(_, _, l)| l)
    }

    fn table(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Lang::En => en::TEXT,
            Lang::Fr => fr::TEXT,
            Lang::Zh => zh::TEXT,
            Lang::Ja => ja::TEXT,
            Lang::Es => es::TEXT,
        }
    }

    /// The text of a key (the English one when a table lacks it, the key itself when English
    /// does: the unit tests make both impossible).
    pub fn t(self, key: &'static str) -> &'static str {
        static MAPS: OnceLock<HashMap<(Lang, &'static str), &'static str>> = OnceLock::new();
        let maps = MAPS.get_or_init(|| {
            let mut m = HashMap::new();
            for l in Lang::ALL {
                for (k, v) in l.table() {
                    m.insert((l, *k), *v);
                }
            }
            m
        });
        maps.get(&(self, key))
            .or_else(|| maps.get(&(Lang::En, key)))
            .copied()
            .unwrap_or(key)
    }

    /// The text of a key with `{name}` placeholders filled.
    pub fn tf(self, key: &'static str, args: &[(&str, &str)]) -> String {
        let mut s = self.t(key).to_string();
        for (k, v) in args {
            s = s.replace(&format!("{{{k}}}"), v);
        }
        s
    }

    /// Which plural form a count takes: `one` or `other` (CLDR's cardinal rules for the five
    /// languages: English and Spanish `one` for 1, French for 0 and 1, Chinese and Japanese
    /// have one form).
    pub fn plural_form(self, n: u64) -> &'static str {
        match self {
            Lang::En | Lang::Es if n == 1 => "one",
            Lang::Fr if n <= 1 => "one",
            _ => "other",
        }
    }

    /// The text of a counted key (`<key>.one` or `<key>.other`, by [`Lang::plural_form`]) with
    /// `{n}` filled with the count written the locale's way.
    pub fn plural(self, key: &'static str, n: u64) -> String {
        let form = self.plural_form(n);
        let find = |l: Lang| {
            l.table()
                .iter()
                .find(|(k, _)| k.strip_prefix(key).and_then(|r| r.strip_prefix('.')) == Some(form))
                .map(|(_, v)| *v)
        };
        find(self)
            .or_else(|| find(Lang::En))
            .unwrap_or(key)
            .replace("{n}", &self.num(n))
    }

    /// A whole number with the locale's grouping: `12,345` (en, zh, ja), `12 345` (fr, a
    /// narrow no-break space), `12.345` (es, from five digits on, as the RAE advises).
    pub fn num(self, n: u64) -> String {
        let digits = n.to_string();
        let (sep, min) = match self {
            Lang::En | Lang::Zh | Lang::Ja => (",", 4),
            Lang::Fr => ("\u{202f}", 4),
            Lang::Es => (".", 5),
        };
        if digits.len() < min {
            return digits;
        }
        linkly_core::stdx::group_thousands(n, sep)
    }

    /// A date and time (Unix ms) in the server's time zone, as the locale writes it.
    pub fn datetime(self, millis: i64) -> String {
        let Some(t) = chrono::Local.timestamp_millis_opt(millis).single() else {
            return String::new();
        };
        let (y, m, d, hh, mm) = (t.year(), t.month(), t.day(), t.hour(), t.minute());
        match self {
            Lang::En => {
                const M: [&str; 12] = [
                    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
                    "Dec",
                ];
                format!("{} {d}, {y}, {hh:02}:{mm:02}", M[m as usize - 1])
            }
            Lang::Fr => {
                const M: [&str; 12] = [
                    "janv.", "févr.", "mars", "avr.", "mai", "juin", "juil.", "août", "sept.",
                    "oct.", "nov.", "déc.",
                ];
                format!("{d} {} {y}, {hh:02}:{mm:02}", M[m as usize - 1])
            }
            Lang::Es => {
                const M: [&str; 12] = [
                    "ene", "feb", "mar", "abr", "may", "jun", "jul", "ago", "sept", "oct", "nov",
                    "dic",
                ];
                format!("{d} {} {y}, {hh:02}:{mm:02}", M[m as usize - 1])
            }
            Lang::Zh | Lang::Ja => format!("{y}年{m}月{d}日 {hh:02}:{mm:02}"),
        }
    }

    /// A date (Unix ms) without the time.
    pub fn date(self, millis: i64) -> String {
        let full = self.datetime(millis);
        match full.rsplit_once([',', ' ']) {
            Some((date, _)) => date.trim_end_matches(',').to_string(),
            None => full,
        }
    }

    /// A size in bytes, rounded, with the locale's decimal mark.
    pub fn bytes(self, n: u64) -> String {
        let (v, unit) = match n {
            0..1_000 => return format!("{} B", self.num(n)),
            1_000..1_000_000 => (n as f64 / 1e3, "kB"),
            1_000_000..1_000_000_000 => (n as f64 / 1e6, "MB"),
            _ => (n as f64 / 1e9, "GB"),
        };
        let s = format!("{v:.1}");
        let s = match self {
            Lang::Fr | Lang::Es => s.replace('.', ","),
            _ => s,
        };
        format!("{s} {unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn keys(l: Lang) -> BTreeSet<&'static str> {
        l.table().iter().map(|(k, _)| *k).collect()
    }

    #[test]
    fn every_language_has_every_key_once() {
        let en = keys(Lang::En);
        assert_eq!(
            en.len(),
            Lang::En.table().len(),
            "a key is defined twice in en"
        );
        for l in Lang::ALL {
            let k = keys(l);
            assert_eq!(k.len(), l.table().len(), "a key is defined twice in {l:?}");
            let missing: Vec<_> = en.difference(&k).collect();
            assert!(missing.is_empty(), "{l:?} lacks {missing:?}");
            let extra: Vec<_> = k.difference(&en).collect();
            assert!(extra.is_empty(), "{l:?} has keys English lacks: {extra:?}");
            for (key, v) in l.table() {
                assert!(!v.trim().is_empty(), "{l:?} {key} is empty");
                // Placeholders must be the same as English's.
                let ph = |s: &str| {
                    s.split('{')
                        .skip(1)
                        .filter_map(|p| p.split_once('}').map(|(n, _)| n.to_string()))
                        .collect::<BTreeSet<_>>()
                };
                assert_eq!(
                    ph(v),
                    ph(Lang::En.t(key)),
                    "{l:?} {key}: placeholders differ"
                );
            }
        }
    }

    /// Every key the code asks for (`.t("…")` and `.tf("…"`) is in the English table.
    #[test]
    fn every_key_used_exists() {
        let en = keys(Lang::En);
        let sources = [
            include_str!("../lib.rs"),
            include_str!("../layout.rs"),
            include_str!("../pages/overview.rs"),
            include_str!("../pages/search.rs"),
            include_str!("../pages/document.rs"),
            include_str!("../pages/notes.rs"),
            include_str!("../pages/libraries.rs"),
            include_str!("../pages/agents.rs"),
            include_str!("../pages/settings.rs"),
            include_str!("../pages/signin.rs"),
            include_str!("../pages/mod.rs"),
        ];
        let mut missing = BTreeSet::new();
        for src in sources {
            for pat in [".t(\"", ".tf(\""] {
                for part in src.split(pat).skip(1) {
                    let key = part.split('"').next().unwrap_or("");
                    if !en.contains(key) {
                        missing.insert(key.to_string());
                    }
                }
            }
            // A counted key has both forms.
            for part in src.split(".plural(\"").skip(1) {
                let key = part.split('"').next().unwrap_or("");
                for form in ["one", "other"] {
                    let full = format!("{key}.{form}");
                    if !en.contains(full.as_str()) {
                        missing.insert(full);
                    }
                }
            }
        }
        assert!(missing.is_empty(), "keys used but not defined: {missing:?}");
    }

    #[test]
    fn plural_rules_per_language() {
        assert_eq!(Lang::En.plural("search.count", 1), "1 document found");
        assert_eq!(Lang::En.plural("search.count", 0), "0 documents found");
        assert_eq!(Lang::Fr.plural("search.count", 0), "0 document trouvé");
        assert_eq!(Lang::Fr.plural("search.count", 2), "2 documents trouvés");
        assert_eq!(Lang::Es.plural("search.count", 1), "1 documento encontrado");
        assert_eq!(
            Lang::Es.plural("search.count", 0),
            "0 documentos encontrados"
        );
        assert_eq!(Lang::Ja.plural("search.count", 1), "1 件のドキュメント");
        assert_eq!(
            Lang::En.plural("search.count", 12345),
            "12,345 documents found"
        );
    }

    #[test]
    fn accept_language_picks_the_best_supported() {
        assert_eq!(
            Lang::from_accept_language("de-DE,ja;q=0.8,en;q=0.5"),
            Some(Lang::Ja)
        );
        assert_eq!(Lang::from_accept_language("zh-CN,zh;q=0.9"), Some(Lang::Zh));
        assert_eq!(Lang::from_accept_language("de"), None);
        assert_eq!(Lang::from_accept_language("fr;q=0, es"), Some(Lang::Es));
    }

    #[test]
    fn numbers_in_each_locale() {
        assert_eq!(Lang::En.num(1234567), "1,234,567");
        assert_eq!(Lang::Fr.num(12345), "12\u{202f}345");
        assert_eq!(Lang::Es.num(1234), "1234");
        assert_eq!(Lang::Es.num(12345), "12.345");
        assert_eq!(Lang::Ja.num(999), "999");
        assert_eq!(Lang::Fr.bytes(1_500_000), "1,5 MB");
    }

    #[test]
    fn dates_in_each_locale() {
        // Noon UTC keeps the day the same in every time zone from -11 to +11.
        let t = chrono::Utc
            .with_ymd_and_hms(2026, 3, 5, 12, 0, 0)
            .unwrap()
            .timestamp_millis();
        assert!(
            Lang::En.date(t).starts_with("Mar 5, 2026"),
            "{}",
            Lang::En.date(t)
        );
        assert!(Lang::Fr.date(t).starts_with("5 mars 2026"));
        assert!(Lang::Ja.date(t).starts_with("2026年3月5日"));
        assert!(Lang::Es.date(t).starts_with("5 mar 2026"));
    }
}
