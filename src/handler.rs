//! The SQL handler of `replay`: a file of SQL with named placeholders (`:amount`), rewritten
//! to the backend's placeholders and always bound, never spliced into the text.

use std::collections::BTreeMap;

use anyhow::bail;
use serde_json::Value;

use crate::store::{Backend, Dialect};

/// Placeholders every message provides.
pub const BUILT_INS: [&str; 7] = [
    "event_id",
    "topic",
    "partition",
    "offset",
    "key",
    "timestamp",
    "payload",
];

/// One statement of the handler: its text for the backend and the names to bind, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    pub sql: String,
    pub params: Vec<String>,
    /// PostgreSQL, when the server could type every parameter: the statement with each one
    /// sent as text and cast to that type. The generic driver binds a value by its JSON type
    /// (a string as text), which a `jsonb`, `uuid` or `timestamptz` parameter refuses.
    pub sent_as_text: Option<crate::store::pg_pipeline::SentAsText>,
}

/// Replaces `$n` outside quotes, dollar quotes included, where it is not the start of a
/// longer number.
pub(crate) fn replace_placeholder(sql: &str, placeholder: &str, with: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quote: Option<char> = None;
    let mut index = 0;
    let mut before: Option<char> = None;
    while index < sql.len() {
        let rest = &sql[index..];
        let c = rest.chars().next().unwrap_or_default();
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if rest.starts_with(placeholder)
                && !before.is_some_and(in_a_name)
                && !rest[placeholder.len()..].starts_with(|d: char| d.is_ascii_digit()) =>
            {
                out.push_str(with);
                index += placeholder.len();
                before = None;
                continue;
            }
            None => {
                if let Some(length) = dollar_quoted(rest, before) {
                    out.push_str(&rest[..length]);
                    index += length;
                    before = None;
                    continue;
                }
            }
        }
        out.push(c);
        index += c.len_utf8();
        before = Some(c);
    }
    out
}

/// A placeholder of the backend's own (`$2`, `?`, SQLite's `@name`) at `chars[at]`: replay
/// numbers the placeholders itself, so the value bound there would be another's, or none.
fn own_placeholder(chars: &[char], at: usize) -> anyhow::Error {
    let end = (at + 1..chars.len())
        .find(|&i| !(chars[i].is_alphanumeric() || chars[i] == '_'))
        .unwrap_or(chars.len());
    let placeholder: String = chars[at..end].iter().collect();
    let line = 1 + chars[..at].iter().filter(|c| **c == '\n').count();
    crate::error::usage(format!(
        "the handler SQL has a placeholder of its own, {placeholder}, on line {line}; name each \
         value with a :name placeholder (:event_id, :payload, a payload field, or --param)"
    ))
}

/// Whether `c` may go on a name (PostgreSQL takes `$` after its first character).
fn in_a_name(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// PostgreSQL: the length in bytes of the dollar-quoted string (`$$…$$`, `$tag$…$tag$`) that
/// `rest` starts with, up to the end of the text when it is not closed; `None` when `rest`
/// does not start one. `before` is the character before, as a `$` inside a name (`a$b$`)
/// starts nothing.
fn dollar_quoted(rest: &str, before: Option<char>) -> Option<usize> {
    if !rest.starts_with('$') || before.is_some_and(in_a_name) {
        return None;
    }
    let tag_length = 1 + rest[1..].find('$')?;
    let tag = &rest[..=tag_length];
    let name = &tag[1..tag.len() - 1];
    let is_tag = name.is_empty()
        || (name.starts_with(|c: char| c.is_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_alphanumeric() || c == '_'));
    if !is_tag {
        return None;
    }
    Some(match rest[tag.len()..].find(tag) {
        Some(end) => tag.len() + end + tag.len(),
        None => rest.len(),
    })
}

/// Splits the file into statements and rewrites `:name` placeholders. Quoted strings, quoted
/// identifiers, comments, and PostgreSQL's `::type` casts and dollar-quoted strings are left
/// alone; a placeholder of the backend's own (`$2`, `?`) is refused. MySQL also escapes a
/// quote inside a string with a backslash (`'it\'s'`) and starts comments with `#`.
pub fn parse(text: &str, dialect: &Dialect) -> anyhow::Result<Vec<Statement>> {
    // No driver sends a NUL in a statement's text: SQLite's refuses it on the client, and the
    // servers' protocols end the text there. A file saved as UTF-16 is mostly NULs.
    if let Some(at) = text.find('\0') {
        let line = 1 + text[..at].matches('\n').count();
        return Err(crate::error::usage(format!(
            "the handler SQL holds a NUL byte on line {line}; save it as UTF-8 text (was it \
             saved as UTF-16?)"
        )));
    }
    let mysql = std::ptr::eq(dialect, Backend::Mysql.dialect());
    let sqlite = std::ptr::eq(dialect, Backend::Sqlite.dialect());
    let mut statements = Vec::new();
    let mut sql = String::new();
    let mut params: Vec<String> = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let finish = |sql: &mut String, params: &mut Vec<String>, statements: &mut Vec<Statement>| {
        if !sql.trim().is_empty() {
            statements.push(Statement {
                sql: sql.trim().to_string(),
                params: std::mem::take(params),
                sent_as_text: None,
            });
        }
        sql.clear();
        params.clear();
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\'' | '"' | '`' => {
                // Copy the quoted run whole; a doubled quote is an escaped one.
                sql.push(c);
                i += 1;
                while i < chars.len() {
                    sql.push(chars[i]);
                    if mysql && c != '`' && chars[i] == '\\' {
                        if let Some(&escaped) = chars.get(i + 1) {
                            sql.push(escaped);
                        }
                        i += 2;
                        continue;
                    }
                    if chars[i] == c {
                        if chars.get(i + 1) == Some(&c) {
                            sql.push(c);
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                if i >= chars.len() {
                    bail!("the handler SQL has an unterminated {c}…{c} quote");
                }
                i += 1;
            }
            // SQLite also quotes a name in brackets: `[@by]` is a column, not a placeholder.
            '[' if sqlite => {
                let Some(end) = (i + 1..chars.len()).find(|&end| chars[end] == ']') else {
                    bail!("the handler SQL has an unterminated […] quote");
                };
                sql.extend(&chars[i..=end]);
                i = end + 1;
            }
            '-' if chars.get(i + 1) == Some(&'-') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '#' if mysql => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                i += 2;
                while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                    i += 1;
                }
                i += 2;
                sql.push(' ');
            }
            '$' if dialect.numbered_params => {
                let before = i.checked_sub(1).map(|b| chars[b]);
                if !before.is_some_and(in_a_name)
                    && chars.get(i + 1).is_some_and(char::is_ascii_digit)
                {
                    return Err(own_placeholder(&chars, i));
                }
                // A dollar-quoted string is copied whole: `:name` in a function body is text.
                let rest: String = chars[i..].iter().collect();
                let length = dollar_quoted(&rest, before).unwrap_or(1);
                sql.push_str(&rest[..length]);
                i += rest[..length].chars().count();
            }
            // PostgreSQL's `?` is a jsonb operator; elsewhere it is a placeholder.
            '?' if !dialect.numbered_params => return Err(own_placeholder(&chars, i)),
            // SQLite's other placeholders: `$1` and `$name` (a `$` inside a name is part of
            // it), `@name`, `#name`, and `:1` or `:é`, which a `:name` of replay's is not.
            '$' | '@' | '#'
                if sqlite
                    && chars
                        .get(i + 1)
                        .is_some_and(|n| n.is_alphanumeric() || *n == '_')
                    && !(c == '$' && i.checked_sub(1).is_some_and(|b| in_a_name(chars[b]))) =>
            {
                return Err(own_placeholder(&chars, i))
            }
            ':' if sqlite
                && chars
                    .get(i + 1)
                    .is_some_and(|n| n.is_alphanumeric() && !n.is_ascii_alphabetic()) =>
            {
                return Err(own_placeholder(&chars, i))
            }
            ':' if chars.get(i + 1) == Some(&':') => {
                sql.push_str("::");
                i += 2;
            }
            ':' if chars
                .get(i + 1)
                .is_some_and(|n| n.is_ascii_alphabetic() || *n == '_') =>
            {
                let start = i + 1;
                let mut end = start;
                while end < chars.len() && (chars[end].is_ascii_alphanumeric() || chars[end] == '_')
                {
                    end += 1;
                }
                let name: String = chars[start..end].iter().collect();
                if dialect.numbered_params {
                    let number = match params.iter().position(|p| *p == name) {
                        Some(index) => index + 1,
                        None => {
                            params.push(name);
                            params.len()
                        }
                    };
                    sql.push_str(&format!("${number}"));
                } else {
                    params.push(name);
                    sql.push('?');
                }
                i = end;
            }
            ';' => {
                finish(&mut sql, &mut params, &mut statements);
                i += 1;
            }
            _ => {
                sql.push(c);
                i += 1;
            }
        }
    }
    finish(&mut sql, &mut params, &mut statements);
    for (index, statement) in statements.iter().enumerate() {
        if let Some(problem) = ends_the_transaction(&statement.sql, mysql) {
            return Err(crate::error::usage(format!(
                "statement {} of the handler SQL {problem}, ending the transaction that holds \
                 the message's inbox row: its effect and that row would no longer commit \
                 together; replay begins and commits that transaction itself, so leave it out",
                index + 1
            )));
        }
    }
    if statements.is_empty() {
        // A file given by mistake (an empty one, comments only): nothing was run yet.
        return Err(crate::error::usage(
            "the handler SQL file holds no statement",
        ));
    }
    Ok(statements)
}

/// Why `sql` (one statement, comments removed) would end the transaction replay runs the
/// handler in, if it would: a transaction-control statement, or on MySQL one that commits
/// implicitly (DDL other than on temporary tables, `LOCK TABLES`, `GRANT`, …).
fn ends_the_transaction(sql: &str, mysql: bool) -> Option<String> {
    let mut words = sql
        .split(|c: char| !c.is_ascii_alphabetic())
        .map(str::to_ascii_uppercase);
    // A statement that starts with a keyword; `(SELECT …)` or a quoted name does not.
    let first = words.next().filter(|word| !word.is_empty())?;
    let second = words.find(|word| !word.is_empty()).unwrap_or_default();
    const CONTROL: [&str; 9] = [
        "BEGIN",
        "START",
        "COMMIT",
        "END",
        "ROLLBACK",
        "ABORT",
        "SAVEPOINT",
        "RELEASE",
        "XA",
    ];
    // The statements MySQL's and MariaDB's manuals list as causing an implicit commit.
    const COMMITS_IMPLICITLY: [&str; 21] = [
        "ALTER",
        "CREATE",
        "DROP",
        "RENAME",
        "TRUNCATE",
        "LOCK",
        "UNLOCK",
        "GRANT",
        "REVOKE",
        "ANALYZE",
        "OPTIMIZE",
        "REPAIR",
        "FLUSH",
        "RESET",
        "CACHE",
        "CHECK",
        "BACKUP",
        "INSTALL",
        "UNINSTALL",
        "CHANGE",
        "STOP",
    ];
    // Two-word ones, whose first word also starts statements that commit nothing.
    const COMMITS_IMPLICITLY_AS: [(&str, &str); 3] = [
        ("LOAD", "INDEX"),
        ("SET", "PASSWORD"),
        ("SET", "AUTOCOMMIT"),
    ];
    if CONTROL.contains(&first.as_str()) {
        return Some(format!("is a {first} statement"));
    }
    let temporary = matches!(first.as_str(), "CREATE" | "DROP") && second == "TEMPORARY";
    let commits = COMMITS_IMPLICITLY.contains(&first.as_str())
        || COMMITS_IMPLICITLY_AS.contains(&(first.as_str(), second.as_str()));
    if mysql && !temporary && commits {
        return Some(format!(
            "is a {first} statement, which MySQL commits implicitly"
        ));
    }
    None
}

/// The value of a placeholder for one message: a built-in, a `--param` JSON pointer, or a
/// top-level field of the JSON payload. `None` when the message has no value for it.
pub fn value(
    name: &str,
    built_in: Option<Value>,
    pointers: &BTreeMap<String, String>,
    payload: Option<&Value>,
) -> Option<Value> {
    if built_in.is_some() {
        return built_in;
    }
    let payload = payload?;
    match (pointers.get(name), payload) {
        (Some(pointer), _) => payload.pointer(pointer).cloned(),
        // `/name` on an object is the field itself: a placeholder's name has no `/` or `~`
        // to unescape, and the lookup spares building the pointer for every message.
        (None, Value::Object(fields)) => fields.get(name).cloned(),
        (None, _) => payload.pointer(&format!("/{name}")).cloned(),
    }
}

/// `name=json:/a/b`, for `--param`.
pub fn parse_param(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, source)) if !name.is_empty() && source.starts_with("json:/") => {
            Ok((name.to_string(), source["json:".len()..].to_string()))
        }
        _ => Err(format!("'{text}' is not a parameter; expected NAME=json:/pointer, e.g. account=json:/order/account")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Backend;

    #[test]
    fn placeholders_are_replaced_whole() {
        assert_eq!(
            replace_placeholder("$1 + $10 + $1 + '$1'", "$1", "X"),
            "X + $10 + X + '$1'"
        );
        // Dollar quotes are text; a `$` inside a name starts none.
        assert_eq!(
            replace_placeholder("$$ $1 $$ || $1 || $q$ $1 $q$ || a$b$1 || $1$", "$1", "X"),
            "$$ $1 $$ || X || $q$ $1 $q$ || a$b$1 || X$"
        );
        assert_eq!(replace_placeholder("$$ $1", "$1", "X"), "$$ $1");
    }

    #[test]
    fn a_nul_byte_is_refused_with_its_line() {
        let utf16: String = "SELECT 1;\nINSERT INTO t VALUES (:event_id)"
            .chars()
            .flat_map(|c| [c, '\0'])
            .collect();
        for (text, line) in [(utf16.as_str(), 1), ("SELECT 1;\nSELECT '\0';", 2)] {
            for backend in [Backend::Sqlite, Backend::Postgres, Backend::Mysql] {
                let error = parse(text, backend.dialect()).unwrap_err();
                assert!(crate::error::is_usage(&error), "{error:#}");
                assert_eq!(
                    error.to_string(),
                    format!(
                        "the handler SQL holds a NUL byte on line {line}; save it as UTF-8 \
                         text (was it saved as UTF-16?)"
                    )
                );
            }
        }
    }

    #[test]
    fn placeholders_of_the_backends_own_are_refused() {
        let refused = |sql: &str, backend: Backend| {
            let error = parse(sql, backend.dialect()).unwrap_err();
            assert!(crate::error::is_usage(&error), "{error:#}");
            error.to_string()
        };
        assert_eq!(
            refused("INSERT INTO t VALUES (:event_id,\n $12)", Backend::Postgres),
            "the handler SQL has a placeholder of its own, $12, on line 2; name each value \
             with a :name placeholder (:event_id, :payload, a payload field, or --param)"
        );
        assert!(refused("SELECT ? FROM t", Backend::Mysql).contains(" ?, on line 1;"));
        assert!(refused("SELECT ?", Backend::Sqlite).contains(" ?, on line 1;"));
        // SQLite's own also take a name, or a number after `$` or `:`.
        for own in ["$1", "$x", "@x", "#x", ":1", ":é", "?2"] {
            assert!(
                refused(
                    &format!("INSERT INTO t VALUES (:event_id, {own})"),
                    Backend::Sqlite
                )
                .contains(&format!(" {own}, on line 1;")),
                "{own}"
            );
        }
        // A `$` inside a name, or text: no placeholder.
        let sqlite = "SELECT a$1, '$1 @x :1', [@by], [t:1] FROM t WHERE x = :x";
        assert_eq!(
            parse(sqlite, Backend::Sqlite.dialect()).unwrap()[0].params,
            ["x"]
        );
        // MySQL's user variables are no placeholders.
        assert!(parse("SELECT @x := :x", Backend::Mysql.dialect()).is_ok());
        // Text, a jsonb operator, a name: none is a placeholder.
        let pg = "SELECT '$1', $$ $2 $$, \"a$1\", a$1, j ? 'k' FROM t WHERE x = :x";
        assert_eq!(
            parse(pg, Backend::Postgres.dialect()).unwrap()[0].params,
            ["x"]
        );
        assert!(parse("SELECT '?' -- ?", Backend::Mysql.dialect()).is_ok());
    }

    #[test]
    fn dollar_quoted_text_keeps_its_colons_on_postgres() {
        let sql = "INSERT INTO t (a, b) VALUES ($$x :a $1$$, :b); SELECT $f$;$f$, :a";
        let pg = parse(sql, Backend::Postgres.dialect()).unwrap();
        assert_eq!(pg[0].sql, "INSERT INTO t (a, b) VALUES ($$x :a $1$$, $1)");
        assert_eq!(pg[0].params, ["b"]);
        assert_eq!(pg[1].sql, "SELECT $f$;$f$, $1");
        assert_eq!(pg[1].params, ["a"]);
    }

    #[test]
    fn placeholders_become_the_backends_and_keep_their_order() {
        let sql = "UPDATE accounts SET balance = balance + :amount WHERE id = :account; \
                   INSERT INTO log (e, a) VALUES (:event_id, :amount)";
        let pg = parse(sql, Backend::Postgres.dialect()).unwrap();
        assert_eq!(
            pg[0].sql,
            "UPDATE accounts SET balance = balance + $1 WHERE id = $2"
        );
        assert_eq!(pg[0].params, ["amount", "account"]);
        assert_eq!(pg[1].sql, "INSERT INTO log (e, a) VALUES ($1, $2)");
        assert_eq!(pg[1].params, ["event_id", "amount"]);
        let my = parse(sql, Backend::Mysql.dialect()).unwrap();
        assert_eq!(
            my[0].sql,
            "UPDATE accounts SET balance = balance + ? WHERE id = ?"
        );
        assert_eq!(my[1].params, ["event_id", "amount"]);
    }

    #[test]
    fn repeated_names_reuse_a_number_only_where_the_backend_can() {
        let pg = parse("SELECT :a, :b, :a", Backend::Postgres.dialect()).unwrap();
        assert_eq!(pg[0].sql, "SELECT $1, $2, $1");
        assert_eq!(pg[0].params, ["a", "b"]);
        let lite = parse("SELECT :a, :b, :a", Backend::Sqlite.dialect()).unwrap();
        assert_eq!(lite[0].sql, "SELECT ?, ?, ?");
        assert_eq!(lite[0].params, ["a", "b", "a"]);
    }

    #[test]
    fn quotes_comments_and_casts_are_not_placeholders() {
        let sql = "-- :not_this\nINSERT INTO t VALUES (':nor_this', \"x:y\", :yes::text /* :no */, 'it''s :no');";
        let pg = parse(sql, Backend::Postgres.dialect()).unwrap();
        assert_eq!(pg.len(), 1);
        assert_eq!(pg[0].params, ["yes"]);
        assert_eq!(
            pg[0].sql,
            "INSERT INTO t VALUES (':nor_this', \"x:y\", $1::text  , 'it''s :no')"
        );
        assert!(parse("SELECT 'open", Backend::Postgres.dialect())
            .unwrap_err()
            .to_string()
            .contains("unterminated"));
        assert!(parse(" ; -- nothing", Backend::Postgres.dialect()).is_err());
    }

    #[test]
    fn mysql_backslash_escapes_and_hash_comments_hide_no_placeholder() {
        let sql =
            "# :not_this\nINSERT INTO t VALUES ('it\\'s :no', \"a\\\"b :no\", :yes, '\\\\', :also)";
        let my = parse(sql, Backend::Mysql.dialect()).unwrap();
        assert_eq!(my.len(), 1);
        assert_eq!(my[0].params, ["yes", "also"]);
        assert_eq!(
            my[0].sql,
            "INSERT INTO t VALUES ('it\\'s :no', \"a\\\"b :no\", ?, '\\\\', ?)"
        );
        // Elsewhere a backslash is an ordinary character and '#' is not a comment.
        let pg = parse("SELECT '\\', :a, 1 # 2", Backend::Postgres.dialect()).unwrap();
        assert_eq!(pg[0].sql, "SELECT '\\', $1, 1 # 2");
        assert_eq!(pg[0].params, ["a"]);
    }

    #[test]
    fn statements_that_end_the_transaction_are_refused() {
        let refused = |sql: &str, backend: Backend| -> Option<String> {
            let error = parse(sql, backend.dialect()).err()?;
            assert!(crate::error::is_usage(&error), "{sql}");
            Some(error.to_string())
        };
        let insert = "INSERT INTO t VALUES (:event_id)";
        for backend in [Backend::Sqlite, Backend::Postgres, Backend::Mysql] {
            for (sql, statement, keyword) in [
                (format!("BEGIN; {insert}; COMMIT;"), 1, "BEGIN"),
                (format!("{insert};\n  /* done */ commit"), 2, "COMMIT"),
                (format!("{insert}; -- x\nEnd;"), 2, "END"),
                (format!("start transaction; {insert}"), 1, "START"),
                (format!("{insert}; ROLLBACK"), 2, "ROLLBACK"),
                (
                    format!("SAVEPOINT s; {insert}; RELEASE SAVEPOINT s"),
                    1,
                    "SAVEPOINT",
                ),
            ] {
                let message = refused(&sql, backend).unwrap_or_else(|| panic!("{sql}"));
                assert!(
                    message.starts_with(&format!(
                        "statement {statement} of the handler SQL is a {keyword} statement, \
                         ending the transaction that holds the message's inbox row"
                    )),
                    "{message}"
                );
            }
            // Words that only look alike, and what PostgreSQL and SQLite keep in the
            // transaction.
            for sql in [
                "UPDATE commits SET n = n + 1 WHERE id = :event_id",
                "INSERT INTO t (\"begin\") VALUES ('COMMIT')",
                "(SELECT 1)",
                "SELECT begin_date FROM t",
            ] {
                assert_eq!(refused(sql, backend), None, "{sql}");
            }
        }
        for sql in [
            "CREATE TABLE t2 (a int)",
            "DROP INDEX i",
            "TRUNCATE t",
            "CHECK TABLE t",
            "LOAD INDEX INTO CACHE t",
            "SET autocommit = 1",
        ] {
            assert_eq!(refused(sql, Backend::Postgres), None, "{sql}");
            assert_eq!(refused(sql, Backend::Sqlite), None, "{sql}");
            let message = refused(sql, Backend::Mysql).unwrap();
            assert!(
                message.contains("which MySQL commits implicitly, ending the transaction"),
                "{message}"
            );
        }
        assert_eq!(
            refused("CREATE TEMPORARY TABLE t2 (a int)", Backend::Mysql),
            None
        );
        assert_eq!(refused("drop temporary table t2", Backend::Mysql), None);
        assert_eq!(
            refused("SET @total = @total + :amount", Backend::Mysql),
            None
        );
        assert_eq!(
            refused("LOAD DATA INFILE 'x' INTO TABLE t", Backend::Mysql),
            None
        );
    }

    #[test]
    fn values_come_from_built_ins_pointers_then_the_payload() {
        let payload: Value = serde_json::json!({"amount": 5, "order": {"account": "a-1"}});
        let pointers = BTreeMap::from([("account".to_string(), "/order/account".to_string())]);
        let offset = || Some(serde_json::json!(41));
        assert_eq!(
            value("offset", offset(), &pointers, Some(&payload)),
            Some(serde_json::json!(41))
        );
        assert_eq!(
            value("amount", None, &pointers, Some(&payload)),
            Some(serde_json::json!(5))
        );
        assert_eq!(
            value("account", None, &pointers, Some(&payload)),
            Some(serde_json::json!("a-1"))
        );
        assert_eq!(value("missing", None, &pointers, Some(&payload)), None);
        assert_eq!(value("amount", None, &pointers, None), None);
        // A payload that is not an object is still addressed by pointer.
        let list = serde_json::json!([7, 8]);
        let index = BTreeMap::from([("second".to_string(), "/1".to_string())]);
        assert_eq!(
            value("second", None, &index, Some(&list)),
            Some(serde_json::json!(8))
        );
        assert_eq!(value("amount", None, &index, Some(&list)), None);
        assert!(parse_param("account=json:/order/account").is_ok());
        assert!(parse_param("account=/order")
            .unwrap_err()
            .contains("NAME=json:/pointer"));
    }
}
