
use builtin;
use str;

set edit:completion:arg-completer[inboxctl] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'inboxctl'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'inboxctl'= {
            cand --format 'Output format: tables for people, JSON for scripts, CSV where rows are the point'
            cand -v 'Print more detail on stderr (repeat for more)'
            cand --verbose 'Print more detail on stderr (repeat for more)'
            cand -q 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand --quiet 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand migrate 'Create, upgrade or downgrade the processed_messages table'
            cand inspect 'Show what the inbox holds: rows per consumer, ages, offset ranges; or look up one event'
            cand prune 'Delete rows older than a retention, in small batches'
            cand offsets 'Show or reset a consumer group''s committed offsets'
            cand compare 'Compare a group''s committed offsets with the inbox: lost, pending redelivery, orphans'
            cand replay 'Re-drive a range of a topic through an idempotent handler, each event exactly once'
            cand completions 'Print a shell completion script'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'inboxctl;migrate'= {
            cand --format 'Output format: tables for people, JSON for scripts, CSV where rows are the point'
            cand -v 'Print more detail on stderr (repeat for more)'
            cand --verbose 'Print more detail on stderr (repeat for more)'
            cand -q 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand --quiet 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand run 'Apply every pending migration (creates the database file for SQLite)'
            cand status 'List the migrations and whether each is applied'
            cand revert 'Undo the last migration, or every migration above --to'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'inboxctl;migrate;run'= {
            cand --database-url 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)'
            cand --connect-timeout 'Give up connecting after this long (e.g. 5s, 1m)'
            cand --lock-timeout 'How long a migration may wait for a lock on the inbox''s tables (PostgreSQL, MySQL), which the application''s open transactions hold, before it gives up; the application''s statements queue behind it meanwhile. 0 waits without limit [default: the session''s own limit where it has one, 5s otherwise]'
            cand --format 'Output format: tables for people, JSON for scripts, CSV where rows are the point'
            cand --dry-run 'Print the SQL that would run and change nothing'
            cand -v 'Print more detail on stderr (repeat for more)'
            cand --verbose 'Print more detail on stderr (repeat for more)'
            cand -q 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand --quiet 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'inboxctl;migrate;status'= {
            cand --database-url 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)'
            cand --connect-timeout 'Give up connecting after this long (e.g. 5s, 1m)'
            cand --format 'Output format: tables for people, JSON for scripts, CSV where rows are the point'
            cand -v 'Print more detail on stderr (repeat for more)'
            cand --verbose 'Print more detail on stderr (repeat for more)'
            cand -q 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand --quiet 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'inboxctl;migrate;revert'= {
            cand --database-url 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)'
            cand --connect-timeout 'Give up connecting after this long (e.g. 5s, 1m)'
            cand --to 'Revert down to this version (0 reverts everything and drops the table)'
            cand --lock-timeout 'How long a migration may wait for a lock on the inbox''s tables (PostgreSQL, MySQL), which the application''s open transactions hold, before it gives up; the application''s statements queue behind it meanwhile. 0 waits without limit [default: the session''s own limit where it has one, 5s otherwise]'
            cand --format 'Output format: tables for people, JSON for scripts, CSV where rows are the point'
            cand --dry-run 'Print the SQL that would run and change nothing'
            cand -y 'Do not ask before dropping a table that holds rows, or (reverting migration 2) the topic, partition and offset rows hold'
            cand --yes 'Do not ask before dropping a table that holds rows, or (reverting migration 2) the topic, partition and offset rows hold'
            cand -v 'Print more detail on stderr (repeat for more)'
            cand --verbose 'Print more detail on stderr (repeat for more)'
            cand -q 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand --quiet 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'inboxctl;migrate;help'= {
            cand run 'Apply every pending migration (creates the database file for SQLite)'
            cand status 'List the migrations and whether each is applied'
            cand revert 'Undo the last migration, or every migration above --to'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'inboxctl;migrate;help;run'= {
        }
        &'inboxctl;migrate;help;status'= {
        }
        &'inboxctl;migrate;help;revert'= {
        }
        &'inboxctl;migrate;help;help'= {
        }
        &'inboxctl;inspect'= {
            cand --database-url 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)'
            cand --connect-timeout 'Give up connecting after this long (e.g. 5s, 1m)'
            cand --consumer 'Only this consumer'
            cand --event-id 'Look up one event id: did we process it, when, from where?'
            cand --format 'Output format: tables for people, JSON for scripts, CSV where rows are the point'
            cand --estimate 'Row counts from the planner''s statistics (PostgreSQL, MySQL), without reading the rows: fast on large tables of few consumers (it asks twice per consumer), no ages or partitions'
            cand -v 'Print more detail on stderr (repeat for more)'
            cand --verbose 'Print more detail on stderr (repeat for more)'
            cand -q 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand --quiet 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'inboxctl;prune'= {
            cand --database-url 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)'
            cand --connect-timeout 'Give up connecting after this long (e.g. 5s, 1m)'
            cand --older-than 'Delete rows processed longer ago than this (e.g. 7d, 36h, 2w; 1m is a minute, 1M a month)'
            cand --before 'Delete rows processed before this time (RFC 3339, or YYYY-MM-DD[ HH:MM[:SS]] in UTC)'
            cand --consumer 'Only this consumer''s rows'
            cand --batch-size 'Rows deleted per transaction, at most 10000000 [default: 20000 on PostgreSQL, 5000 on SQLite and MySQL]'
            cand --max-rows 'Stop after deleting this many rows in all'
            cand --pause 'Wait this long after each batch (e.g. 2ms), leaving the database to the application''s own writes: a slower prune for steadier latency [default: 0s; on SQLite, as long as the batch took]'
            cand --strategy 'How batches find their rows: `index` takes the oldest first through the (consumer, processed_at) index; `blocks` (PostgreSQL) reads the table''s pages in physical order, one page range per batch, as one DELETE would; `auto` takes blocks on PostgreSQL when at least a tenth of the table goes and no --max-rows is given, index otherwise'
            cand --group 'Keep every row this consumer group could still have redelivered (offset >= its committed offset for that partition); prunes only consumer GROUP unless --consumer names the group''s inbox consumer; needs the brokers'
            cand --brokers 'Bootstrap brokers, host:port[,host:port…]'
            cand -X 'A librdkafka property, repeatable: -X security.protocol=SASL_SSL -X sasl.mechanism=PLAIN'
            cand --kafka-timeout 'Give up on any one broker call after this long'
            cand --format 'Output format: tables for people, JSON for scripts, CSV where rows are the point'
            cand --dry-run 'Count what would be deleted and delete nothing'
            cand -y 'Do not ask for confirmation (required when not on a terminal, e.g. from cron); the rows are then deleted without being counted first'
            cand --yes 'Do not ask for confirmation (required when not on a terminal, e.g. from cron); the rows are then deleted without being counted first'
            cand -v 'Print more detail on stderr (repeat for more)'
            cand --verbose 'Print more detail on stderr (repeat for more)'
            cand -q 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand --quiet 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'inboxctl;offsets'= {
            cand --format 'Output format: tables for people, JSON for scripts, CSV where rows are the point'
            cand -v 'Print more detail on stderr (repeat for more)'
            cand --verbose 'Print more detail on stderr (repeat for more)'
            cand -q 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand --quiet 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand show 'Committed offset, log start, log end and lag per partition, and the group''s state; without --group, the groups there are'
            cand reset 'Move the group''s committed offsets (dry run unless --execute)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'inboxctl;offsets;show'= {
            cand --brokers 'Bootstrap brokers, host:port[,host:port…]'
            cand -X 'A librdkafka property, repeatable: -X security.protocol=SASL_SSL -X sasl.mechanism=PLAIN'
            cand --kafka-timeout 'Give up on any one broker call after this long'
            cand -g 'The consumer group; without it, every group the brokers know, with its state and member count'
            cand --group 'The consumer group; without it, every group the brokers know, with its state and member count'
            cand -t 'Only these topics (repeatable); default: every topic the group has offsets for'
            cand --topic 'Only these topics (repeatable); default: every topic the group has offsets for'
            cand --format 'Output format: tables for people, JSON for scripts, CSV where rows are the point'
            cand -v 'Print more detail on stderr (repeat for more)'
            cand --verbose 'Print more detail on stderr (repeat for more)'
            cand -q 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand --quiet 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'inboxctl;offsets;reset'= {
            cand --brokers 'Bootstrap brokers, host:port[,host:port…]'
            cand -X 'A librdkafka property, repeatable: -X security.protocol=SASL_SSL -X sasl.mechanism=PLAIN'
            cand --kafka-timeout 'Give up on any one broker call after this long'
            cand -g 'The consumer group; it must have no active members'
            cand --group 'The consumer group; it must have no active members'
            cand -t 'TOPIC or TOPIC:P,P,… (repeatable); not needed with --from-file or --all-topics'
            cand --topic 'TOPIC or TOPIC:P,P,… (repeatable); not needed with --from-file or --all-topics'
            cand --to-offset 'To this offset in every partition named'
            cand --to-datetime 'To the first message at or after this time (RFC 3339, or YYYY-MM-DD[ HH:MM[:SS]] UTC)'
            cand --by-duration 'To the first message at or after this long ago (e.g. 30m, 2h)'
            cand --shift-by 'Move each committed offset by N (negative: back)'
            cand --from-file 'Apply a plan file: CSV with topic,partition,offset (as --export and undo files are)'
            cand --consumer 'The inbox consumer for --to-inbox (default: the group name)'
            cand --database-url 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)'
            cand --connect-timeout 'Give up connecting after this long (e.g. 5s, 1m)'
            cand --export 'Write the computed plan to this CSV file instead of applying it (`-`: to standard output)'
            cand --undo-file 'Where --execute writes the undo plan (default: inboxctl-undo-GROUP-TIME.csv here)'
            cand --format 'Output format: tables for people, JSON for scripts, CSV where rows are the point'
            cand --all-topics 'Every partition the group has a committed offset for, in every topic'
            cand --to-earliest 'To each partition''s log start'
            cand --to-latest 'To each partition''s log end (skip everything not yet read)'
            cand --to-inbox 'To the inbox''s position: highest processed offset + 1 per partition'
            cand --execute 'Apply the new offsets (without it, only show them)'
            cand --dry-run 'Only show the new offsets, as without --execute (for kafka-consumer-groups.sh habits)'
            cand -v 'Print more detail on stderr (repeat for more)'
            cand --verbose 'Print more detail on stderr (repeat for more)'
            cand -q 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand --quiet 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'inboxctl;offsets;help'= {
            cand show 'Committed offset, log start, log end and lag per partition, and the group''s state; without --group, the groups there are'
            cand reset 'Move the group''s committed offsets (dry run unless --execute)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'inboxctl;offsets;help;show'= {
        }
        &'inboxctl;offsets;help;reset'= {
        }
        &'inboxctl;offsets;help;help'= {
        }
        &'inboxctl;compare'= {
            cand --brokers 'Bootstrap brokers, host:port[,host:port…]'
            cand -X 'A librdkafka property, repeatable: -X security.protocol=SASL_SSL -X sasl.mechanism=PLAIN'
            cand --kafka-timeout 'Give up on any one broker call after this long'
            cand --database-url 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)'
            cand --connect-timeout 'Give up connecting after this long (e.g. 5s, 1m)'
            cand -g 'The consumer group whose committed offsets are compared'
            cand --group 'The consumer group whose committed offsets are compared'
            cand -t 'Only these topics (repeatable); default: every topic the group has offsets for'
            cand --topic 'Only these topics (repeatable); default: every topic the group has offsets for'
            cand --consumer 'The inbox consumer (default: the group name)'
            cand --event-id-from 'Where a message''s event id is: header:NAME, json:/pointer, key, coordinates (default: header event_id, then JSON field event_id)'
            cand --pruned-before 'Rows processed before WHEN may be gone, deleted by a prune inboxctl did not record (an application''s own DELETE): a timestamp or -DURATION (ago). Offsets are then checked as after a recorded prune; the later of the two cutoffs counts'
            cand --show 'Show at most this many offsets or events per finding in tables (JSON lists all, but without --scan at most 10,000 lost per partition)'
            cand --format 'Output format: tables for people, JSON for scripts, CSV where rows are the point'
            cand --scan 'Read the topic from log start to log end: name each lost event, find duplicates, and match by event id (works on tables without coordinates)'
            cand -v 'Print more detail on stderr (repeat for more)'
            cand --verbose 'Print more detail on stderr (repeat for more)'
            cand -q 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand --quiet 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'inboxctl;replay'= {
            cand --brokers 'Bootstrap brokers, host:port[,host:port…]'
            cand -X 'A librdkafka property, repeatable: -X security.protocol=SASL_SSL -X sasl.mechanism=PLAIN'
            cand --kafka-timeout 'Give up on any one broker call after this long'
            cand --database-url 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)'
            cand --connect-timeout 'Give up connecting after this long (e.g. 5s, 1m)'
            cand -t 'The topic to replay'
            cand --topic 'The topic to replay'
            cand -p 'Only these partitions (repeatable); default: all'
            cand --partition 'Only these partitions (repeatable); default: all'
            cand --from 'Where to start: earliest, OFFSET, P:OFFSET,…, a timestamp, -DURATION (ago), committed:GROUP'
            cand --to 'Where to stop, exclusive: latest, OFFSET, a timestamp; fixed when the command starts'
            cand --consumer 'The inbox consumer the events are recorded under'
            cand --event-id-from 'Where a message''s event id is: header:NAME, json:/pointer, key, coordinates (default: header event_id, then JSON field event_id)'
            cand --sql 'SQL handler: a file of statements with :placeholders, run in the inbox''s transaction'
            cand --exec 'Exec handler: a command started once, fed one JSON line per message, answering {"ok":true} or {"ok":false,"error":"…"} per line'
            cand --handler-timeout 'Exec handler: how long it may take over one message (e.g. 30s). One that takes longer is stopped, with its process group, and the run ends (exit 1) after recording what it answered ok for; with --on-error skip, the message fails and a new handler goes on [default: no limit]'
            cand --param 'Bind a placeholder to a nested JSON field: NAME=json:/a/b (repeatable)'
            cand --batch-size 'Messages per transaction'
            cand --on-missing-id 'A message without an event id: fail (stop) or skip it'
            cand --on-error 'A message the handler fails on: stop, or skip it (and go on)'
            cand --dead-letter 'Append failed and skipped messages here as JSON lines, with the error'
            cand --format 'Output format: tables for people, JSON for scripts, CSV where rows are the point'
            cand --dry-run 'Say what would run and what would be skipped; write nothing'
            cand -v 'Print more detail on stderr (repeat for more)'
            cand --verbose 'Print more detail on stderr (repeat for more)'
            cand -q 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand --quiet 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'inboxctl;completions'= {
            cand --format 'Output format: tables for people, JSON for scripts, CSV where rows are the point'
            cand -v 'Print more detail on stderr (repeat for more)'
            cand --verbose 'Print more detail on stderr (repeat for more)'
            cand -q 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand --quiet 'Only errors and warnings on stderr (no progress bars, no notes)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'inboxctl;help'= {
            cand migrate 'Create, upgrade or downgrade the processed_messages table'
            cand inspect 'Show what the inbox holds: rows per consumer, ages, offset ranges; or look up one event'
            cand prune 'Delete rows older than a retention, in small batches'
            cand offsets 'Show or reset a consumer group''s committed offsets'
            cand compare 'Compare a group''s committed offsets with the inbox: lost, pending redelivery, orphans'
            cand replay 'Re-drive a range of a topic through an idempotent handler, each event exactly once'
            cand completions 'Print a shell completion script'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'inboxctl;help;migrate'= {
            cand run 'Apply every pending migration (creates the database file for SQLite)'
            cand status 'List the migrations and whether each is applied'
            cand revert 'Undo the last migration, or every migration above --to'
        }
        &'inboxctl;help;migrate;run'= {
        }
        &'inboxctl;help;migrate;status'= {
        }
        &'inboxctl;help;migrate;revert'= {
        }
        &'inboxctl;help;inspect'= {
        }
        &'inboxctl;help;prune'= {
        }
        &'inboxctl;help;offsets'= {
            cand show 'Committed offset, log start, log end and lag per partition, and the group''s state; without --group, the groups there are'
            cand reset 'Move the group''s committed offsets (dry run unless --execute)'
        }
        &'inboxctl;help;offsets;show'= {
        }
        &'inboxctl;help;offsets;reset'= {
        }
        &'inboxctl;help;compare'= {
        }
        &'inboxctl;help;replay'= {
        }
        &'inboxctl;help;completions'= {
        }
        &'inboxctl;help;help'= {
        }
    ]
    $completions[$command]
}
