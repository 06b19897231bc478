//! A PostgreSQL fast path for `replay`'s SQL handler. tokio-postgres pipelines queries issued
//! together on one connection, so a batch's statements (a new batch's whole transaction,
//! `BEGIN` to `COMMIT`) cost about one round trip instead of one each; sqlx sends them one
//! at a time.
//!
//! Parameters are typed from the prepared statements: integers, floats, booleans, text and
//! JSON bind natively; any other type (numeric, timestamptz, uuid, …) is sent as text and cast
//! by the server, so the handler's SQL needs no casts.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;

use anyhow::Context;
use bytes::BytesMut;
use futures_util::future::{join, join3, join4, join_all};
use futures_util::FutureExt;
use serde_json::Value;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{IsNull, ToSql, Type};
use tokio_postgres::{Client, GenericClient, Statement};

use super::BatchError;
use crate::handler;

/// How a JSON value is sent for one parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    Text,
    Json,
}

impl Kind {
    fn of(ty: &Type) -> Option<Kind> {
        Kind::named(ty.schema(), ty.name())
    }

    /// The kind of the type `schema.name` (`pg_catalog.int4`); `None` for a type sent as
    /// text and cast by the server.
    fn named(schema: &str, name: &str) -> Option<Kind> {
        if schema != "pg_catalog" {
            return None;
        }
        Some(match name {
            "bool" => Kind::Bool,
            "int2" => Kind::Int2,
            "int4" => Kind::Int4,
            "int8" => Kind::Int8,
            "float4" => Kind::Float4,
            "float8" => Kind::Float8,
            "text" | "varchar" | "bpchar" | "name" | "unknown" => Kind::Text,
            "json" | "jsonb" => Kind::Json,
            _ => return None,
        })
    }
}

/// The type `schema.name` as SQL: both quoted, so that a name the grammar gives a default
/// length (`bit`, `character`: one) means the type itself, of any length.
fn type_in_sql(schema: &str, name: &str) -> String {
    let quote = |identifier: &str| format!("\"{}\"", identifier.replace('"', "\"\""));
    format!("{}.{}", quote(schema), quote(name))
}

/// `sql` with each parameter of `casts` (its index, `$1` as 0, and its type as schema and
/// name) sent as text and cast by the server to that type.
fn cast_from_text<'a>(
    sql: &str,
    casts: impl DoubleEndedIterator<Item = (usize, &'a str, &'a str)>,
) -> String {
    let mut sql = sql.to_string();
    // Highest numbers first, so that $1 never matches the start of $10.
    for (index, schema, name) in casts.rev() {
        let placeholder = format!("${}", index + 1);
        let cast = format!("CAST({placeholder}::text AS {})", type_in_sql(schema, name));
        sql = handler::replace_placeholder(&sql, &placeholder, &cast);
    }
    sql
}

/// A statement whose parameters all go as text, each cast by the server to the type it
/// inferred for it (PostgreSQL's main connection, through the generic driver, which would
/// bind a value by its JSON type). Each value is first converted as the handler's own
/// connections convert it, so both take and refuse the same values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentAsText {
    pub sql: String,
    /// How each parameter's value is converted; `None` for a type sent as text.
    kinds: Vec<Option<Kind>>,
}

impl SentAsText {
    /// `types` are the parameters' types as (schema, name), `$1` first.
    pub fn new(statement: &handler::Statement, types: &[(String, String)]) -> SentAsText {
        let sql = cast_from_text(
            &statement.sql,
            types
                .iter()
                .enumerate()
                .map(|(index, (schema, name))| (index, schema.as_str(), name.as_str())),
        );
        let kinds = types
            .iter()
            .map(|(schema, name)| Kind::named(schema, name))
            .collect();
        SentAsText { sql, kinds }
    }

    /// The text sent for `value` of parameter `index` (`name`), `None` for SQL NULL; an
    /// error says why the value does not fit (`:amount: 1.5 is not an integer`).
    pub fn text(&self, index: usize, name: &str, value: Value) -> Result<Option<String>, String> {
        let kind = self.kinds.get(index).copied().flatten();
        Ok(match to_param(value, name, kind.unwrap_or(Kind::Text))? {
            Param::Null => None,
            Param::Bool(v) => Some(v.to_string()),
            Param::Int2(v) => Some(v.to_string()),
            Param::Int4(v) => Some(v.to_string()),
            Param::Int8(v) => Some(v.to_string()),
            Param::Float4(v) => Some(v.to_string()),
            Param::Float8(v) => Some(v.to_string()),
            Param::Text(v) => Some(v),
            Param::Json(v) => Some(v.to_string()),
        })
    }
}

/// `value` for parameter `name` of `kind`. The payload is the text read from Kafka: a json
/// or jsonb parameter takes the JSON it holds, not that text as a JSON string.
fn to_param(value: Value, name: &str, kind: Kind) -> Result<Param, String> {
    let value = match (kind, name, value) {
        (Kind::Json, "payload", Value::String(text)) => serde_json::from_str(&text)
            .map_err(|e| format!(":payload is not JSON ({e}), for a json parameter"))?,
        (_, _, value) => value,
    };
    convert(&value, kind).map_err(|e| format!(":{name}: {e}"))
}

/// One bound value, already converted to what the statement expects.
#[derive(Debug)]
enum Param {
    Null,
    Bool(bool),
    Int2(i16),
    Int4(i32),
    Int8(i64),
    Float4(f32),
    Float8(f64),
    Text(String),
    Json(Value),
}

impl ToSql for Param {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Param::Null => Ok(IsNull::Yes),
            Param::Bool(v) => v.to_sql(ty, out),
            Param::Int2(v) => v.to_sql(ty, out),
            Param::Int4(v) => v.to_sql(ty, out),
            Param::Int8(v) => v.to_sql(ty, out),
            Param::Float4(v) => v.to_sql(ty, out),
            Param::Float8(v) => v.to_sql(ty, out),
            Param::Text(v) => v.to_sql(ty, out),
            Param::Json(v) => v.to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    tokio_postgres::types::to_sql_checked!();
}

fn convert(value: &Value, kind: Kind) -> Result<Param, String> {
    let text = || match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let integer = || -> Result<i64, String> {
        match value {
            Value::Number(n) => n.as_i64().ok_or_else(|| format!("{n} is not an integer")),
            Value::String(s) => s
                .trim()
                .parse()
                .map_err(|_| format!("'{s}' is not an integer")),
            Value::Bool(b) => Ok(i64::from(*b)),
            other => Err(format!("{other} is not an integer")),
        }
    };
    let float = || -> Result<f64, String> {
        match value {
            Value::Number(n) => n.as_f64().ok_or_else(|| format!("{n} is not a number")),
            Value::String(s) => s
                .trim()
                .parse()
                .map_err(|_| format!("'{s}' is not a number")),
            other => Err(format!("{other} is not a number")),
        }
    };
    if value.is_null() {
        return Ok(Param::Null);
    }
    Ok(match kind {
        Kind::Bool => match value {
            Value::Bool(b) => Param::Bool(*b),
            other => return Err(format!("{other} is not a boolean")),
        },
        Kind::Int2 => Param::Int2(i16::try_from(integer()?).map_err(|e| e.to_string())?),
        Kind::Int4 => Param::Int4(i32::try_from(integer()?).map_err(|e| e.to_string())?),
        Kind::Int8 => Param::Int8(integer()?),
        Kind::Float4 => Param::Float4(float()? as f32),
        Kind::Float8 => Param::Float8(float()?),
        Kind::Text => Param::Text(text()),
        Kind::Json => Param::Json(value.clone()),
    })
}

/// A handler statement prepared on the pipeline's connection.
struct Prepared {
    statement: Statement,
    /// The text prepared (after the casts for parameters sent as text).
    sql: String,
    names: Vec<String>,
    kinds: Vec<Kind>,
}

/// A connection with the statements prepared on it: prepared statements and the temporary
/// function belong to the session that made them.
struct Lane {
    client: Arc<Client>,
    /// The task that drives the connection: it ends once the client and its statements are
    /// dropped and the server has been told (Terminate).
    connection: tokio::task::JoinHandle<()>,
    handler: Vec<Prepared>,
    insert: Statement,
    /// The same insert without the conflict check: see [`PgPipeline::run`].
    insert_new: Statement,
    /// The one-statement handler as a function applied to a whole batch in one statement,
    /// when it could be set up (see [`set_based`]).
    set_based: Option<Statement>,
}

impl Lane {
    async fn connect(url: &str, statements: &[handler::Statement]) -> anyhow::Result<Lane> {
        let (client, connection) = connect_client(url).await?;
        let mut handler = Vec::new();
        for statement in statements {
            handler.push(prepare(&client, statement).await?);
        }
        let insert = client
            .prepare(
                "INSERT INTO processed_messages (consumer, event_id, topic, \"partition\", \"offset\") \
                 SELECT $1, e, $2, p, o FROM unnest($3::text[], $4::int4[], $5::int8[]) AS t(e, p, o) \
                 ON CONFLICT (consumer, event_id) DO NOTHING RETURNING event_id",
            )
            .await?;
        let insert_new = client
            .prepare(
                "INSERT INTO processed_messages (consumer, event_id, topic, \"partition\", \"offset\") \
                 SELECT $1, e, $2, p, o FROM unnest($3::text[], $4::int4[], $5::int8[]) AS t(e, p, o)",
            )
            .await?;
        let set_based = match handler.as_slice() {
            [only] => set_based(&client, only).await,
            _ => None,
        };
        Ok(Lane {
            client: Arc::new(client),
            connection,
            handler,
            insert,
            insert_new,
            set_based,
        })
    }
}

/// The next batch's inbox rows, inserted on the other lane while this batch's handler runs
/// and commits: the server does both at once, on two cores where it has them. Its
/// transaction stays open until that batch's turn adds the handler and commits, after this
/// one has committed, so batches still apply in order; anything else rolls it back.
struct Ahead {
    lane: usize,
    rows: Vec<(String, i32, i64)>,
    inserted: tokio::task::JoinHandle<Result<(), tokio_postgres::Error>>,
}

/// The inbox rows of a batch as an insert's parameters: consumer, topic, ids, partitions,
/// offsets.
type InsertParams<'a> = [&'a (dyn ToSql + Sync); 5];

pub struct PgPipeline {
    /// One connection, or two where a second could be made: see [`Ahead`].
    lanes: Vec<Lane>,
    /// The lane of the last batch.
    lane: usize,
    /// Whether the next batch tries [`Lane::insert_new`] first: until a batch meets an id
    /// the inbox already holds, and again once a batch finds none.
    expect_new: bool,
    ahead: Option<Ahead>,
    /// Batches that committed with their rows inserted ahead.
    committed_ahead: u64,
}

impl PgPipeline {
    /// Connects (see [`connect_client`]; an error means the caller keeps to the plain path)
    /// and prepares the handler's statements, on a second connection too where one can be
    /// made.
    pub async fn connect(
        url: &str,
        statements: &[handler::Statement],
    ) -> anyhow::Result<PgPipeline> {
        let mut lanes = vec![Lane::connect(url, statements).await?];
        if let Ok(second) = Lane::connect(url, statements).await {
            lanes.push(second);
        }
        Ok(PgPipeline {
            lanes,
            lane: 0,
            expect_new: true,
            ahead: None,
            committed_ahead: 0,
        })
    }

    /// Whether the handler runs once per batch (see [`set_based`]).
    pub fn is_set_based(&self) -> bool {
        self.lanes[0].set_based.is_some()
    }

    /// Whether batches overlap on two connections (see [`Ahead`]).
    pub fn overlaps(&self) -> bool {
        self.lanes.len() > 1
    }

    /// How many batches committed with their rows inserted ahead.
    pub fn committed_ahead(&self) -> u64 {
        self.committed_ahead
    }

    /// One transaction: the inbox rows (event id, partition, offset), then every handler
    /// statement for the new ones, pipelined. `values(index, name)` gives a message's value
    /// for a placeholder. Returns the indexes of the new (processed) messages, committed.
    /// `next` is the next batch's rows where they are known: they may be inserted ahead.
    pub async fn run<F>(
        &mut self,
        consumer: &str,
        topic: &str,
        rows: &[(String, i32, i64)],
        next: Option<&[(String, i32, i64)]>,
        values: F,
    ) -> Result<HashSet<usize>, BatchError>
    where
        F: Fn(usize, &str) -> Result<Value, String>,
    {
        let result = self.run_batch(consumer, topic, rows, next, &values).await;
        // A failed batch is retried outside the pipeline, where the next batch's open
        // inserts could hold an id it needs: they go first.
        if result.is_err() {
            self.abandon_ahead().await;
        }
        result
    }

    /// Rolls back the rows inserted ahead, if any: the batch they belong to will not come
    /// (the run stops) or will come another way.
    pub async fn abandon_ahead(&mut self) {
        if let Some(ahead) = self.ahead.take() {
            roll_back(&self.lanes, ahead).await;
        }
    }

    /// Ends the pipeline's sessions as the protocol asks. Dropped instead, the connections'
    /// tasks may not run again before the process exits, and the server counts the sessions
    /// abandoned.
    pub async fn close(mut self) {
        self.abandon_ahead().await;
        for lane in self.lanes {
            // The prepared statements hold the client weakly: they keep nothing open, and
            // once the session has ended their drop sends the server nothing.
            end_session(lane.client, lane.connection).await;
        }
    }

    async fn run_batch<F>(
        &mut self,
        consumer: &str,
        topic: &str,
        rows: &[(String, i32, i64)],
        next: Option<&[(String, i32, i64)]>,
        values: &F,
    ) -> Result<HashSet<usize>, BatchError>
    where
        F: Fn(usize, &str) -> Result<Value, String>,
    {
        let ids: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
        let partitions: Vec<i32> = rows.iter().map(|r| r.1).collect();
        let offsets: Vec<i64> = rows.iter().map(|r| r.2).collect();
        let params: InsertParams = [&consumer, &topic, &ids, &partitions, &offsets];
        let ahead = match self.ahead.take() {
            Some(ahead) if ahead.rows == rows => Some(ahead),
            Some(other) => {
                roll_back(&self.lanes, other).await;
                None
            }
            None => None,
        };
        let next = next.filter(|next| {
            self.lanes.len() > 1
                && self.expect_new
                && !next.is_empty()
                && !has_repeats(&next.iter().map(|r| r.0.as_str()).collect::<Vec<_>>())
        });
        // A range replayed for the first time holds only new ids, and a plain insert costs
        // the server a third less than one that first looks each key up (ON CONFLICT): one
        // descent of the key's index per row instead of two. It is tried first while
        // batches keep coming out all new. An id already there (or twice in the batch, or
        // inserted by another session meanwhile) fails it as a whole, and the batch starts
        // over with the conflict check.
        let plain = if let Some(ahead) = ahead {
            self.lane = ahead.lane;
            let inserted = match ahead.inserted.await {
                Ok(inserted) => inserted,
                Err(error) => {
                    let _ = self.lanes[self.lane].client.batch_execute("ROLLBACK").await;
                    return Err(BatchError::final_error(anyhow::anyhow!(
                        "the inbox insert sent ahead stopped: {error}"
                    )));
                }
            };
            let started = match inserted {
                Ok(()) => true,
                Err(error) => {
                    let lane = &self.lanes[self.lane];
                    lane.client.batch_execute("ROLLBACK").await.map_err(fail)?;
                    if error.code() != Some(&SqlState::UNIQUE_VIOLATION) {
                        return Err(fail(error));
                    }
                    false
                }
            };
            if started {
                let applied = self
                    .run_plain(consumer, topic, rows, &params, values, next, true)
                    .await?;
                self.committed_ahead += u64::from(applied.is_some());
                applied
            } else {
                None
            }
        } else if self.expect_new && !has_repeats(&ids) {
            match next {
                Some(_) => {
                    self.run_plain(consumer, topic, rows, &params, values, next, false)
                        .await?
                }
                None => self.run_one_flight(rows, &params, values).await?,
            }
        } else {
            None
        };
        if let Some(new) = plain {
            return Ok(new);
        }
        self.run_checked(rows, &params, values).await
    }

    /// The batch with the conflict check: the insert returns the ids that were new, and the
    /// handler runs for those.
    async fn run_checked<F>(
        &mut self,
        rows: &[(String, i32, i64)],
        params: &InsertParams<'_>,
        values: &F,
    ) -> Result<HashSet<usize>, BatchError>
    where
        F: Fn(usize, &str) -> Result<Value, String>,
    {
        let lane = &self.lanes[self.lane];
        let client = &*lane.client;
        client.batch_execute("BEGIN").await.map_err(fail)?;
        let applied = async {
            let inserted: HashSet<String> = client
                .query(&lane.insert, params)
                .await
                .map_err(fail)?
                .iter()
                .map(|row| row.get::<_, String>(0))
                .collect();
            // The first of each id the insert let in; a repeated id is handled once.
            let mut handled: HashSet<&str> = HashSet::new();
            let new: Vec<usize> = (0..rows.len())
                .filter(|&index| {
                    let id = rows[index].0.as_str();
                    inserted.contains(id) && handled.insert(id)
                })
                .collect();
            let bound = bind(&lane.handler, lane.set_based.as_ref(), rows, &new, values)?;
            first_failure(executions(&lane.handler, client, &bound))
                .await
                .map_err(fail)?;
            client.batch_execute("COMMIT").await.map_err(fail)?;
            Ok::<_, BatchError>((inserted.len(), new))
        }
        .await;
        match applied {
            Ok((inserted, new)) => {
                self.expect_new = inserted == rows.len();
                Ok(new.into_iter().collect())
            }
            Err(error) => {
                let _ = client.batch_execute("ROLLBACK").await;
                Err(error)
            }
        }
    }

    /// The plain insert, the handler and the commit sent together, in one round trip: when
    /// a statement fails, the server skips the rest of the transaction and the COMMIT rolls
    /// it back, so the batch applies whole or not at all. The handler's values are bound
    /// while the server inserts. For a batch with no next batch to insert ahead; `None` as
    /// for [`PgPipeline::run_plain`].
    async fn run_one_flight<F>(
        &self,
        rows: &[(String, i32, i64)],
        params: &InsertParams<'_>,
        values: &F,
    ) -> Result<Option<HashSet<usize>>, BatchError>
    where
        F: Fn(usize, &str) -> Result<Value, String>,
    {
        let lane = &self.lanes[self.lane];
        let client = &*lane.client;
        let mut begin = Box::pin(client.batch_execute("BEGIN"));
        let mut insert = Box::pin(client.execute(&lane.insert_new, params));
        // A first poll sends a request; the replies are read below.
        let begun = (&mut begin).now_or_never();
        let inserted = (&mut insert).now_or_never();
        // The connection's task writes them out; woken from here, it would wait on this
        // worker until this task yields.
        tokio::task::yield_now().await;
        let all: Vec<usize> = (0..rows.len()).collect();
        let bound = bind(&lane.handler, lane.set_based.as_ref(), rows, &all, values);
        let Ok(bound) = bound else {
            let rollback = client.batch_execute("ROLLBACK");
            let (begun, inserted, rolled_back) =
                join3(finish(begun, begin), finish(inserted, insert), rollback).await;
            begun.map_err(fail)?;
            took_every_row(inserted)?;
            rolled_back.map_err(fail)?;
            return Ok(None);
        };
        let handler = first_failure(executions(&lane.handler, client, &bound));
        let commit = client.batch_execute("COMMIT");
        // Joined, not tried: every reply is read, so the connection is idle afterwards.
        let (begun, inserted, handled, committed) = join4(
            finish(begun, begin),
            finish(inserted, insert),
            handler,
            commit,
        )
        .await;
        begun.map_err(fail)?;
        if !took_every_row(inserted)? {
            return Ok(None);
        }
        // Only now, with the insert and the handler through, does the COMMIT's success mean
        // the transaction committed (after a failure it answers ROLLBACK, without error).
        handled.map_err(fail)?;
        committed.map_err(fail)?;
        Ok(Some(all.into_iter().collect()))
    }

    /// The plain insert, the handler and the commit sent together, in one round trip: when
    /// a statement fails, the server skips the rest of the transaction and the COMMIT rolls
    /// it back, so the batch applies whole or not at all. The handler's values are bound
    /// while the server inserts. With `begun`, the transaction and its insert were sent
    /// ahead and succeeded. `None` when nothing was applied and the conflict check is to
    /// decide: an id was already there, or a value could not be bound (it may belong to a
    /// message the inbox holds, which the conflict check skips without binding).
    ///
    /// Once this batch's rows are in, `next` (the next batch's rows) is inserted ahead on
    /// the other lane; it is kept only if this batch commits.
    #[allow(clippy::too_many_arguments)]
    async fn run_plain<F>(
        &mut self,
        consumer: &str,
        topic: &str,
        rows: &[(String, i32, i64)],
        params: &InsertParams<'_>,
        values: &F,
        next: Option<&[(String, i32, i64)]>,
        begun: bool,
    ) -> Result<Option<HashSet<usize>>, BatchError>
    where
        F: Fn(usize, &str) -> Result<Value, String>,
    {
        let lane = &self.lanes[self.lane];
        let client = &*lane.client;
        if !begun {
            let (begun, inserted) = join(
                client.batch_execute("BEGIN"),
                client.execute(&lane.insert_new, params),
            )
            .await;
            let took = begun.map_err(fail).and_then(|()| took_every_row(inserted));
            if !matches!(took, Ok(true)) {
                client.batch_execute("ROLLBACK").await.map_err(fail)?;
                return took.map(|_| None);
            }
        }
        // This batch's rows are in: the next batch's may go in beside its handler. (Not
        // earlier: an id in both would make this insert wait on a transaction that only
        // this process can end.)
        let mut ahead =
            next.map(|next| send_ahead(&self.lanes, 1 - self.lane, consumer, topic, next));
        let all: Vec<usize> = (0..rows.len()).collect();
        let outcome = match bind(&lane.handler, lane.set_based.as_ref(), rows, &all, values) {
            Err(_) => {
                client.batch_execute("ROLLBACK").await.map_err(fail)?;
                Ok(None)
            }
            Ok(bound) => {
                let handler = first_failure(executions(&lane.handler, client, &bound));
                let commit = client.batch_execute("COMMIT");
                // Joined, not tried: every reply is read, so the connection is idle after.
                let work = join(handler, commit);
                tokio::pin!(work);
                // A handler that waits on the rows inserted ahead (a trigger on the inbox
                // that locks what the handler updates, say) would wait for this process,
                // where the server cannot see the cycle: after a while the rows ahead go.
                let (handled, committed) =
                    match tokio::time::timeout(AHEAD_PATIENCE, &mut work).await {
                        Ok(done) => done,
                        Err(_) => {
                            if let Some(ahead) = ahead.take() {
                                roll_back(&self.lanes, ahead).await;
                            }
                            work.await
                        }
                    };
                // Only with the handler through does the COMMIT's success mean the
                // transaction committed (after a failure it answers ROLLBACK, without error).
                handled
                    .map_err(fail)
                    .and_then(|_| committed.map_err(fail))
                    .map(|()| Some(all.into_iter().collect()))
            }
        };
        if let Some(ahead) = ahead {
            self.ahead = Some(ahead);
            if !matches!(outcome, Ok(Some(_))) {
                self.abandon_ahead().await;
            }
        }
        outcome
    }
}

/// How long a batch's handler and commit may take before the next batch's rows, inserted
/// ahead, are rolled back in case they are in its way.
const AHEAD_PATIENCE: std::time::Duration = std::time::Duration::from_secs(1);

/// Ends the rows inserted ahead: waits for their insert, then rolls its transaction back.
async fn roll_back(lanes: &[Lane], ahead: Ahead) {
    let _ = ahead.inserted.await;
    let _ = lanes[ahead.lane].client.batch_execute("ROLLBACK").await;
}

/// Starts inserting `rows` on `lanes[lane]` in a transaction left open, as a task of its own.
fn send_ahead(
    lanes: &[Lane],
    lane: usize,
    consumer: &str,
    topic: &str,
    rows: &[(String, i32, i64)],
) -> Ahead {
    let client = lanes[lane].client.clone();
    let insert_new = lanes[lane].insert_new.clone();
    let (consumer, topic) = (consumer.to_string(), topic.to_string());
    let ids: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
    let partitions: Vec<i32> = rows.iter().map(|r| r.1).collect();
    let offsets: Vec<i64> = rows.iter().map(|r| r.2).collect();
    let inserted = tokio::spawn(async move {
        // One after the other: the insert must never run outside the transaction.
        client.batch_execute("BEGIN").await?;
        client
            .execute(
                &insert_new,
                &[&consumer, &topic, &ids, &partitions, &offsets],
            )
            .await?;
        Ok(())
    });
    Ahead {
        lane,
        rows: rows.to_vec(),
        inserted,
    }
}

/// Whether the plain insert took every row: `false` when an id was already there.
fn took_every_row(inserted: Result<u64, tokio_postgres::Error>) -> Result<bool, BatchError> {
    match inserted {
        Ok(_) => Ok(true),
        Err(error) if error.code() == Some(&SqlState::UNIQUE_VIOLATION) => Ok(false),
        Err(error) => Err(fail(error)),
    }
}

/// Waits for every execution's reply and returns the first failure in statement order. The
/// replies come in that order, but futures polled as a group can see a later one first, and
/// every statement after a failing one answers "current transaction is aborted", which
/// would hide what failed.
async fn first_failure<T, E>(executions: Vec<impl Future<Output = Result<T, E>>>) -> Result<(), E> {
    join_all(executions)
        .await
        .into_iter()
        .try_for_each(|reply| reply.map(|_| ()))
}

/// A future's output: the one a first poll already gave, or the rest of the future's work.
async fn finish<T>(early: Option<T>, rest: impl Future<Output = T>) -> T {
    match early {
        Some(output) => output,
        None => rest.await,
    }
}

/// Each handler parameter's value for the messages at `indexes`, in order.
fn bind<'a, F>(
    handler: &[Prepared],
    set_based: Option<&'a Statement>,
    rows: &[(String, i32, i64)],
    indexes: &[usize],
    values: &F,
) -> Result<Bound<'a>, BatchError>
where
    F: Fn(usize, &str) -> Result<Value, String>,
{
    let mut per_statement = Vec::with_capacity(indexes.len() * handler.len());
    for &index in indexes {
        let row = &rows[index];
        for prepared in handler {
            let mut params = Vec::with_capacity(prepared.names.len());
            for (name, kind) in prepared.names.iter().zip(&prepared.kinds) {
                let value =
                    values(index, name).map_err(|e| BatchError::final_error(anyhow::anyhow!(e)))?;
                params.push(to_param(value, name, *kind).map_err(|e| {
                    BatchError::final_error(anyhow::anyhow!("message {}:{}: {e}", row.1, row.2))
                })?);
            }
            per_statement.push(params);
        }
    }
    let (Some(call), [prepared]) = (set_based, handler) else {
        return Ok(Bound::PerStatement(per_statement));
    };
    // One column of values per parameter, one element per message, in order.
    let mut columns: Vec<Vec<Param>> = (0..prepared.kinds.len())
        .map(|_| Vec::with_capacity(indexes.len()))
        .collect();
    for params in per_statement {
        for (column, param) in columns.iter_mut().zip(params) {
            column.push(param);
        }
    }
    Ok(Bound::Call(call, columns))
}

/// The handler's executions for `bound`, on `client` (a connection or a transaction on
/// it): one call of the set-based function, or every statement for every message.
fn executions<'a, C: GenericClient>(
    handler: &'a [Prepared],
    client: &'a C,
    bound: &'a Bound,
) -> Vec<impl Future<Output = Result<u64, tokio_postgres::Error>> + 'a> {
    match bound {
        Bound::Call(call, columns) => vec![client.execute_raw(*call, columns.iter())],
        Bound::PerStatement(per_statement) => handler
            .iter()
            .cycle()
            .zip(per_statement)
            .map(|(prepared, params)| client.execute_raw(&prepared.statement, params.iter()))
            .collect(),
    }
}

/// A batch's handler parameters: per message and statement, or, for the set-based handler,
/// its call with one column per parameter, one element per message.
enum Bound<'a> {
    PerStatement(Vec<Vec<Param>>),
    Call(&'a Statement, Vec<Vec<Param>>),
}

/// A database error as a batch failure; a deadlock, a serialization failure or a lock wait
/// that timed out may pass when the batch is tried again ([`super::is_transient_sqlstate`]).
fn fail(error: tokio_postgres::Error) -> BatchError {
    let transient = error
        .code()
        .is_some_and(|code| super::is_transient_sqlstate(code.code()));
    // Not the server's answer to a statement: the connection closed or its socket failed.
    let connection_lost = match error.as_db_error() {
        Some(db) => super::is_connection_sqlstate(db.code().code()),
        None => {
            error.is_closed()
                || std::error::Error::source(&error)
                    .is_some_and(|cause| cause.is::<std::io::Error>())
        }
    };
    BatchError {
        error: anyhow::Error::new(error),
        transient,
        connection_lost,
    }
}

/// Whether an id occurs more than once.
fn has_repeats(ids: &[&str]) -> bool {
    let mut seen = HashSet::with_capacity(ids.len());
    !ids.iter().all(|id| seen.insert(*id))
}

/// Ends a session from [`connect_client`] as the protocol asks: the connection's task says
/// goodbye to the server (Terminate) once nothing can send on it any more, and is waited
/// for, or the process may exit before it runs again.
pub async fn end_session(client: Arc<Client>, connection: tokio::task::JoinHandle<()>) {
    drop(client);
    let _ = tokio::time::timeout(super::CLOSE_WAIT, connection).await;
}

/// A tokio-postgres connection with the URL's own `sslmode`, as the main connection has:
/// `prefer` and `require` encrypt without verifying the certificate, as libpq does; the
/// verifying modes are refused, and callers keep to the main connection. With the client
/// comes the task that drives its connection (see [`PgPipeline::close`]).
pub async fn connect_client(url: &str) -> anyhow::Result<(Client, tokio::task::JoinHandle<()>)> {
    if url.contains("sslmode=verify") {
        anyhow::bail!("with sslmode=verify-ca/verify-full only the main connection is used");
    }
    let config: tokio_postgres::Config = url.parse().context("second connection settings")?;
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .context("TLS for the second connection")?
        .dangerous()
        .with_custom_certificate_verifier(std::sync::Arc::new(EncryptOnly(provider)))
        .with_no_client_auth();
    let (client, connection) = config
        .connect(tokio_postgres_rustls::MakeRustlsConnect::new(tls))
        .await
        .context("second connection")?;
    let connection = tokio::spawn(async move {
        let _ = connection.await;
    });
    // The main connection's session settings, in one round trip as it sends them.
    client
        .batch_execute(&super::postgres::DIALECT.session_setup.join("; "))
        .await?;
    Ok((client, connection))
}

/// `sslmode=prefer` and `require`: the connection is encrypted, the server's certificate is
/// not checked (libpq's meaning of those modes), but its handshake signature still is.
#[derive(Debug)]
struct EncryptOnly(std::sync::Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Event ids per round trip of [`for_each_event_id`].
const IDS_PER_CHUNK: i64 = 50_000;

const EVENT_IDS_CONTEXT: &str = "could not read the inbox's event ids";

/// Calls `each` with every event id of the consumer. The ids come as one text per chunk of
/// the primary key, read in key order and joined by newlines: a million ids are twenty rows
/// instead of a million, which is what costs on the client (a row is an allocation and a
/// message). One joined text costs the server little more than half of what a text array
/// does, whose every element is sent as a value of its own. A chunk holding an id with a
/// newline in it splits into more pieces than it has ids; that chunk is read again as an
/// array. The next chunk is asked for before this one is handed out.
pub async fn for_each_event_id(
    client: &std::sync::Arc<Client>,
    consumer: &str,
    mut each: impl FnMut(&str),
) -> anyhow::Result<()> {
    let joined = ChunkQuery::prepare(client, "string_agg(event_id, E'\\n'), COUNT(*)").await?;
    let fetch = |after: Option<String>| {
        let client = std::sync::Arc::clone(client);
        let consumer = consumer.to_string();
        let joined = joined.clone();
        tokio::spawn(async move {
            let row = joined.query(&client, &consumer, after.as_deref()).await?;
            anyhow::Ok((after, row))
        })
    };
    let mut pending = Some(fetch(None));
    while let Some(handle) = pending.take() {
        let (after, row) = handle.await.context(EVENT_IDS_CONTEXT)??;
        let ids: Option<&str> = row.try_get(0).context(EVENT_IDS_CONTEXT)?;
        let count: i64 = row.try_get(1).context(EVENT_IDS_CONTEXT)?;
        let Some(ids) = ids else {
            break;
        };
        let pieces = ids.bytes().filter(|&byte| byte == b'\n').count() as i64 + 1;
        if pieces == count {
            if count == IDS_PER_CHUNK {
                let last = ids.rsplit('\n').next().unwrap_or_default();
                pending = Some(fetch(Some(last.to_string())));
            }
            ids.split('\n').for_each(&mut each);
        } else {
            // An id holds a newline: this chunk again, each id a value of its own.
            let array = ChunkQuery::prepare(client, "array_agg(event_id)").await?;
            let row = array.query(client, consumer, after.as_deref()).await?;
            let ids: Vec<&str> = row.try_get(0).context(EVENT_IDS_CONTEXT)?;
            if let (true, Some(last)) = (ids.len() as i64 == IDS_PER_CHUNK, ids.last()) {
                pending = Some(fetch(Some(last.to_string())));
            }
            ids.into_iter().for_each(&mut each);
        }
    }
    Ok(())
}

/// One aggregate over a chunk of a consumer's ids in key order, the first chunk or the one
/// after a given id. The subquery's order reaches the aggregate (no join in between), so
/// the last id of a chunk is its highest key and the next chunk starts after it.
#[derive(Clone)]
struct ChunkQuery {
    first: tokio_postgres::Statement,
    after: tokio_postgres::Statement,
}

impl ChunkQuery {
    async fn prepare(client: &Client, aggregate: &str) -> anyhow::Result<ChunkQuery> {
        let sql = |after: &str| {
            format!(
                "SELECT {aggregate} FROM (SELECT event_id FROM processed_messages \
                 WHERE consumer = $1{after} ORDER BY event_id LIMIT $2) AS chunk"
            )
        };
        Ok(ChunkQuery {
            first: client.prepare(&sql("")).await.context(EVENT_IDS_CONTEXT)?,
            after: client
                .prepare(&sql(" AND event_id > $3"))
                .await
                .context(EVENT_IDS_CONTEXT)?,
        })
    }

    async fn query(
        &self,
        client: &Client,
        consumer: &str,
        after: Option<&str>,
    ) -> anyhow::Result<tokio_postgres::Row> {
        let row = match after {
            Some(after) => {
                client
                    .query_one(&self.after, &[&consumer, &IDS_PER_CHUNK, &after])
                    .await
            }
            None => {
                client
                    .query_one(&self.first, &[&consumer, &IDS_PER_CHUNK])
                    .await
            }
        };
        row.context(EVENT_IDS_CONTEXT)
    }
}

/// Prepares a statement; parameters of types without a native binding are rewritten as
/// `CAST($n::text AS type)` and sent as text.
async fn prepare(client: &Client, statement: &handler::Statement) -> anyhow::Result<Prepared> {
    let first = client.prepare(&statement.sql).await.with_context(|| {
        format!(
            "could not prepare the handler statement `{}`",
            statement.sql
        )
    })?;
    let types: Vec<Type> = first.params().to_vec();
    // A statement that takes other parameters than the handler names would be refused by
    // the client, so never sent, and the COMMIT pipelined after it would commit the inbox
    // rows without it.
    if types.len() != statement.params.len() {
        anyhow::bail!(
            "the handler statement `{}` takes {} parameters, not the {} it names",
            statement.sql,
            types.len(),
            statement.params.len()
        );
    }
    if types.iter().all(|ty| Kind::of(ty).is_some()) {
        return Ok(Prepared {
            kinds: types
                .iter()
                .map(|ty| Kind::of(ty).unwrap_or(Kind::Text))
                .collect(),
            statement: first,
            sql: statement.sql.clone(),
            names: statement.params.clone(),
        });
    }
    let sql = cast_from_text(
        &statement.sql,
        types
            .iter()
            .enumerate()
            .filter(|(_, ty)| Kind::of(ty).is_none())
            .map(|(index, ty)| (index, ty.schema(), ty.name())),
    );
    let statement_cast = client
        .prepare(&sql)
        .await
        .with_context(|| format!("could not prepare the handler statement `{sql}`"))?;
    Ok(Prepared {
        kinds: statement_cast
            .params()
            .iter()
            .map(|ty| Kind::of(ty).unwrap_or(Kind::Text))
            .collect(),
        statement: statement_cast,
        sql,
        names: statement.params.clone(),
    })
}

/// Sets a one-statement handler up to run once per batch instead of once per message: the
/// statement becomes the body of a temporary SQL function taking its parameters, and one
/// prepared statement calls it for every element of the parameters sent as arrays, in
/// message order. A message then costs the server one function call instead of a protocol
/// round of its own (Bind, Execute, Sync), which is most of the cost of a small statement.
///
/// `None`, keeping the pipelined statements, wherever that is not certain to mean the same:
/// a parameter whose type is not a plain scalar (arrays would flatten), a body that does not
/// make a function (a session without the right to create temporary objects, say).
async fn set_based(client: &Client, prepared: &Prepared) -> Option<Statement> {
    const QUOTE: &str = "$inboxctl_handler$";
    let types = prepared.statement.params();
    let scalar = |ty: &Type| Kind::of(ty).is_some() && *ty != Type::UNKNOWN;
    let sql = &prepared.sql;
    if types.is_empty() || !types.iter().all(scalar) || sql.contains(QUOTE) {
        return None;
    }
    let names: Vec<&str> = types.iter().map(|ty| ty.name()).collect();
    let create = format!(
        "CREATE OR REPLACE FUNCTION pg_temp.inboxctl_handler({}) RETURNS void LANGUAGE sql AS {QUOTE}{sql}{QUOTE}",
        names.join(", ")
    );
    client.batch_execute(&create).await.ok()?;
    let columns: Vec<String> = (1..=types.len()).map(|n| format!("a{n}")).collect();
    let arrays: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(index, name)| format!("${}::{name}[]", index + 1))
        .collect();
    // ORDER BY the ordinality: the function, being volatile, is called after the sort, so
    // the messages are applied in their order.
    let call = format!(
        "SELECT pg_temp.inboxctl_handler({columns}) FROM unnest({arrays}) WITH ORDINALITY AS t({columns}, n) ORDER BY n",
        columns = columns.join(", "),
        arrays = arrays.join(", "),
    );
    client.prepare(&call).await.ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn the_first_failure_in_statement_order_is_reported_whichever_comes_first() {
        // The second statement's failure is ready first, as when the connection's task reads
        // both replies between two polls.
        let executions = vec![
            async {
                tokio::task::yield_now().await;
                Err("violates check constraint")
            }
            .boxed(),
            async { Err("current transaction is aborted") }.boxed(),
            async { Ok(1) }.boxed(),
        ];
        assert_eq!(
            first_failure(executions).await,
            Err("violates check constraint")
        );
        let all_through = vec![
            async { Ok::<u64, &str>(1) }.boxed(),
            async { Ok(2) }.boxed(),
        ];
        assert_eq!(first_failure(all_through).await, Ok(()));
    }

    #[test]
    fn repeated_ids_are_found() {
        assert!(!has_repeats(&[]));
        assert!(!has_repeats(&["a", "b", "c"]));
        assert!(has_repeats(&["a", "b", "a"]));
    }

    #[test]
    fn sent_as_text_casts_to_the_servers_type_and_converts_as_the_pipeline() {
        let statements = handler::parse(
            "INSERT INTO t (a, b, c, d, e) VALUES (:payload, :amount, :at, :code, :payload)",
            crate::store::Backend::Postgres.dialect(),
        )
        .unwrap();
        let types = [
            ("pg_catalog", "jsonb"),
            ("pg_catalog", "int4"),
            ("pg_catalog", "timestamptz"),
            ("pg_catalog", "bpchar"),
        ]
        .map(|(schema, name)| (schema.to_string(), name.to_string()));
        let insert = SentAsText::new(&statements[0], &types);
        assert_eq!(
            insert.sql,
            "INSERT INTO t (a, b, c, d, e) VALUES (\
             CAST($1::text AS \"pg_catalog\".\"jsonb\"), CAST($2::text AS \"pg_catalog\".\"int4\"), \
             CAST($3::text AS \"pg_catalog\".\"timestamptz\"), \
             CAST($4::text AS \"pg_catalog\".\"bpchar\"), CAST($1::text AS \"pg_catalog\".\"jsonb\"))"
        );
        // The payload is the JSON it holds; any other value of a json parameter is JSON.
        let text = |index, name, value| insert.text(index, name, value);
        assert_eq!(
            text(0, "payload", json!(r#"{"a": 1}"#)),
            Ok(Some(r#"{"a":1}"#.into()))
        );
        assert_eq!(text(0, "note", json!("late")), Ok(Some(r#""late""#.into())));
        assert_eq!(
            text(0, "payload", json!("{"))
                .unwrap_err()
                .split(" (")
                .next(),
            Some(":payload is not JSON")
        );
        assert_eq!(text(1, "amount", json!(12)), Ok(Some("12".into())));
        assert_eq!(text(1, "amount", json!(true)), Ok(Some("1".into())));
        assert_eq!(
            text(1, "amount", json!(1.5)),
            Err(":amount: 1.5 is not an integer".into())
        );
        assert_eq!(text(1, "amount", Value::Null), Ok(None));
        assert_eq!(
            text(2, "at", json!("2026-12-01T10:00:00Z")),
            Ok(Some("2026-12-01T10:00:00Z".into()))
        );
        assert_eq!(text(3, "code", json!(12)), Ok(Some("12".into())));
        let flag = SentAsText::new(
            &handler::parse("SELECT :on", crate::store::Backend::Postgres.dialect()).unwrap()[0],
            &[("pg_catalog".into(), "bool".into())],
        );
        assert_eq!(flag.text(0, "on", json!(false)), Ok(Some("false".into())));
        assert_eq!(
            flag.text(0, "on", json!("true")),
            Err(r#":on: "true" is not a boolean"#.into())
        );
    }

    #[test]
    fn types_keep_their_own_length_in_a_cast() {
        assert_eq!(type_in_sql("pg_catalog", "bit"), r#""pg_catalog"."bit""#);
        assert_eq!(type_in_sql("my \"s\"", "Mood"), r#""my ""s"""."Mood""#);
    }

    #[test]
    fn json_values_convert_to_the_parameter_type() {
        assert!(matches!(
            convert(&serde_json::json!(5), Kind::Int4),
            Ok(Param::Int4(5))
        ));
        assert!(matches!(
            convert(&serde_json::json!("7"), Kind::Int8),
            Ok(Param::Int8(7))
        ));
        assert!(matches!(
            convert(&serde_json::json!(1.5), Kind::Float8),
            Ok(Param::Float8(_))
        ));
        assert!(
            matches!(convert(&serde_json::json!(12.5), Kind::Text), Ok(Param::Text(ref s)) if s == "12.5")
        );
        assert!(matches!(convert(&Value::Null, Kind::Int4), Ok(Param::Null)));
        assert!(convert(&serde_json::json!(1.5), Kind::Int4)
            .unwrap_err()
            .contains("not an integer"));
        assert!(convert(&serde_json::json!(70000), Kind::Int2).is_err());
    }
}
