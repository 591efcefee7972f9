//! What a settings file that does not deserialize gets told besides serde's words: a key
//! in the wrong table is named with the table it belongs in, and a missing key with the
//! table that needs it (serde knows only the struct it was filling).

use super::file::FileConfig;
use super::help::PACKAGED_CONFIG;

/// Every table of the settings file, the top level as "".
const TABLES: [&str; 8] = [
    "",
    "auth",
    "auth.roles",
    "auth.proxy",
    "auth.oidc",
    "controller",
    "store",
    "cluster",
];

/// A hint for `err`, which toml gave for `text`, when there is one to give.
pub(super) fn hint(text: &str, err: &toml::de::Error) -> Option<String> {
    let table = err
        .span()
        .map(|span| table_at(text, span.end))
        .unwrap_or_default();
    let message = err.message();
    if let Some(key) = quoted_after(message, "unknown field ") {
        let homes: Vec<String> = TABLES
            .iter()
            .filter(|other| **other != table && accepts(other, key))
            .map(|other| name(other))
            .collect();
        if homes.is_empty() {
            return None;
        }
        return Some(format!(
            "{key} is not a key of {}: it belongs in {}",
            name(&table),
            homes.join(" or ")
        ));
    }
    let key = quoted_after(message, "missing field ")?;
    Some(format!(
        "{} needs the key {key}; {PACKAGED_CONFIG} (contrib/sliced.toml) describes each key",
        name(&table)
    ))
}

fn name(table: &str) -> String {
    if table.is_empty() {
        "the top level (before any [table])".to_owned()
    } else {
        format!("[{table}]")
    }
}

/// The text between backquotes right after `prefix` in `message`.
fn quoted_after<'a>(message: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = &message[message.find(prefix)? + prefix.len()..];
    let rest = rest.strip_prefix('`')?;
    Some(&rest[..rest.find('`')?])
}

/// The table whose header last starts before byte `at` (dotted keys and inline tables
/// aside): a missing key is reported at the header itself.
fn table_at(text: &str, at: usize) -> String {
    let before = text.get(..at).unwrap_or(text);
    before
        .lines()
        .rev()
        .map(str::trim)
        .filter(|line| line.starts_with('[') && !line.starts_with("[["))
        .find_map(|line| Some(line[1..line.find(']')?].trim().to_owned()))
        .unwrap_or_default()
}

/// Whether `table` has a key named `key`: serde refuses an unknown key before it looks
/// at the value, so any other refusal means the key is known there.
fn accepts(table: &str, key: &str) -> bool {
    if !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return false;
    }
    let probe = if table.is_empty() {
        format!("{key} = 0")
    } else {
        format!("[{table}]\n{key} = 0")
    };
    match toml::from_str::<FileConfig>(&probe) {
        Ok(_) => true,
        Err(err) => !err.message().contains("unknown field"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hint_for(text: &str) -> Option<String> {
        let err = toml::from_str::<FileConfig>(text).expect_err("refused");
        hint(text, &err)
    }

    #[test]
    fn a_key_in_the_wrong_table_is_sent_to_its_own() {
        let hint = hint_for("http = \"127.0.0.1:1\"\nmax_ports_per_switch = 8\n").unwrap();
        assert!(hint.contains("belongs in [controller]"), "{hint}");
        let hint = hint_for("[controller]\nhttp = \"127.0.0.1:1\"\n").unwrap();
        assert!(hint.contains("not a key of [controller]"), "{hint}");
        assert!(hint.contains("belongs in the top level"), "{hint}");
        let hint = hint_for("[store]\nuser_header = \"X-User\"\n").unwrap();
        assert!(hint.contains("belongs in [auth.proxy]"), "{hint}");
        assert_eq!(hint_for("no_such_key = 1\n"), None);
    }

    #[test]
    fn a_missing_key_names_its_table() {
        let hint = hint_for("[auth.proxy]\nuser_header = \"X-User\"\n").unwrap();
        assert!(
            hint.starts_with("[auth.proxy] needs the key trusted"),
            "{hint}"
        );
    }
}
