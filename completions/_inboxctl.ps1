
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'inboxctl' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'inboxctl'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'inboxctl' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: tables for people, JSON for scripts, CSV where rows are the point')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('migrate', 'migrate', [CompletionResultType]::ParameterValue, 'Create, upgrade or downgrade the processed_messages table')
            [CompletionResult]::new('inspect', 'inspect', [CompletionResultType]::ParameterValue, 'Show what the inbox holds: rows per consumer, ages, offset ranges; or look up one event')
            [CompletionResult]::new('prune', 'prune', [CompletionResultType]::ParameterValue, 'Delete rows older than a retention, in small batches')
            [CompletionResult]::new('offsets', 'offsets', [CompletionResultType]::ParameterValue, 'Show or reset a consumer group''s committed offsets')
            [CompletionResult]::new('compare', 'compare', [CompletionResultType]::ParameterValue, 'Compare a group''s committed offsets with the inbox: lost, pending redelivery, orphans')
            [CompletionResult]::new('replay', 'replay', [CompletionResultType]::ParameterValue, 'Re-drive a range of a topic through an idempotent handler, each event exactly once')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'inboxctl;migrate' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: tables for people, JSON for scripts, CSV where rows are the point')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Apply every pending migration (creates the database file for SQLite)')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'List the migrations and whether each is applied')
            [CompletionResult]::new('revert', 'revert', [CompletionResultType]::ParameterValue, 'Undo the last migration, or every migration above --to')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'inboxctl;migrate;run' {
            [CompletionResult]::new('--database-url', '--database-url', [CompletionResultType]::ParameterName, 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)')
            [CompletionResult]::new('--connect-timeout', '--connect-timeout', [CompletionResultType]::ParameterName, 'Give up connecting after this long (e.g. 5s, 1m)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long a migration may wait for a lock on the inbox''s tables (PostgreSQL, MySQL), which the application''s open transactions hold, before it gives up; the application''s statements queue behind it meanwhile. 0 waits without limit [default: the session''s own limit where it has one, 5s otherwise]')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: tables for people, JSON for scripts, CSV where rows are the point')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Print the SQL that would run and change nothing')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'inboxctl;migrate;status' {
            [CompletionResult]::new('--database-url', '--database-url', [CompletionResultType]::ParameterName, 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)')
            [CompletionResult]::new('--connect-timeout', '--connect-timeout', [CompletionResultType]::ParameterName, 'Give up connecting after this long (e.g. 5s, 1m)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: tables for people, JSON for scripts, CSV where rows are the point')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'inboxctl;migrate;revert' {
            [CompletionResult]::new('--database-url', '--database-url', [CompletionResultType]::ParameterName, 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)')
            [CompletionResult]::new('--connect-timeout', '--connect-timeout', [CompletionResultType]::ParameterName, 'Give up connecting after this long (e.g. 5s, 1m)')
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'Revert down to this version (0 reverts everything and drops the table)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long a migration may wait for a lock on the inbox''s tables (PostgreSQL, MySQL), which the application''s open transactions hold, before it gives up; the application''s statements queue behind it meanwhile. 0 waits without limit [default: the session''s own limit where it has one, 5s otherwise]')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: tables for people, JSON for scripts, CSV where rows are the point')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Print the SQL that would run and change nothing')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask before dropping a table that holds rows, or (reverting migration 2) the topic, partition and offset rows hold')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask before dropping a table that holds rows, or (reverting migration 2) the topic, partition and offset rows hold')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'inboxctl;migrate;help' {
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Apply every pending migration (creates the database file for SQLite)')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'List the migrations and whether each is applied')
            [CompletionResult]::new('revert', 'revert', [CompletionResultType]::ParameterValue, 'Undo the last migration, or every migration above --to')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'inboxctl;migrate;help;run' {
            break
        }
        'inboxctl;migrate;help;status' {
            break
        }
        'inboxctl;migrate;help;revert' {
            break
        }
        'inboxctl;migrate;help;help' {
            break
        }
        'inboxctl;inspect' {
            [CompletionResult]::new('--database-url', '--database-url', [CompletionResultType]::ParameterName, 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)')
            [CompletionResult]::new('--connect-timeout', '--connect-timeout', [CompletionResultType]::ParameterName, 'Give up connecting after this long (e.g. 5s, 1m)')
            [CompletionResult]::new('--consumer', '--consumer', [CompletionResultType]::ParameterName, 'Only this consumer')
            [CompletionResult]::new('--event-id', '--event-id', [CompletionResultType]::ParameterName, 'Look up one event id: did we process it, when, from where?')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: tables for people, JSON for scripts, CSV where rows are the point')
            [CompletionResult]::new('--estimate', '--estimate', [CompletionResultType]::ParameterName, 'Row counts from the planner''s statistics (PostgreSQL, MySQL), without reading the rows: fast on large tables of few consumers (it asks twice per consumer), no ages or partitions')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'inboxctl;prune' {
            [CompletionResult]::new('--database-url', '--database-url', [CompletionResultType]::ParameterName, 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)')
            [CompletionResult]::new('--connect-timeout', '--connect-timeout', [CompletionResultType]::ParameterName, 'Give up connecting after this long (e.g. 5s, 1m)')
            [CompletionResult]::new('--older-than', '--older-than', [CompletionResultType]::ParameterName, 'Delete rows processed longer ago than this (e.g. 7d, 36h, 2w; 1m is a minute, 1M a month)')
            [CompletionResult]::new('--before', '--before', [CompletionResultType]::ParameterName, 'Delete rows processed before this time (RFC 3339, or YYYY-MM-DD[ HH:MM[:SS]] in UTC)')
            [CompletionResult]::new('--consumer', '--consumer', [CompletionResultType]::ParameterName, 'Only this consumer''s rows')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Rows deleted per transaction, at most 10000000 [default: 20000 on PostgreSQL, 5000 on SQLite and MySQL]')
            [CompletionResult]::new('--max-rows', '--max-rows', [CompletionResultType]::ParameterName, 'Stop after deleting this many rows in all')
            [CompletionResult]::new('--pause', '--pause', [CompletionResultType]::ParameterName, 'Wait this long after each batch (e.g. 2ms), leaving the database to the application''s own writes: a slower prune for steadier latency [default: 0s; on SQLite, as long as the batch took]')
            [CompletionResult]::new('--strategy', '--strategy', [CompletionResultType]::ParameterName, 'How batches find their rows: `index` takes the oldest first through the (consumer, processed_at) index; `blocks` (PostgreSQL) reads the table''s pages in physical order, one page range per batch, as one DELETE would; `auto` takes blocks on PostgreSQL when at least a tenth of the table goes and no --max-rows is given, index otherwise')
            [CompletionResult]::new('--group', '--group', [CompletionResultType]::ParameterName, 'Keep every row this consumer group could still have redelivered (offset >= its committed offset for that partition); prunes only consumer GROUP unless --consumer names the group''s inbox consumer; needs the brokers')
            [CompletionResult]::new('--brokers', '--brokers', [CompletionResultType]::ParameterName, 'Bootstrap brokers, host:port[,host:port…]')
            [CompletionResult]::new('-X', '-X ', [CompletionResultType]::ParameterName, 'A librdkafka property, repeatable: -X security.protocol=SASL_SSL -X sasl.mechanism=PLAIN')
            [CompletionResult]::new('--kafka-timeout', '--kafka-timeout', [CompletionResultType]::ParameterName, 'Give up on any one broker call after this long')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: tables for people, JSON for scripts, CSV where rows are the point')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Count what would be deleted and delete nothing')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when not on a terminal, e.g. from cron); the rows are then deleted without being counted first')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when not on a terminal, e.g. from cron); the rows are then deleted without being counted first')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'inboxctl;offsets' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: tables for people, JSON for scripts, CSV where rows are the point')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Committed offset, log start, log end and lag per partition, and the group''s state; without --group, the groups there are')
            [CompletionResult]::new('reset', 'reset', [CompletionResultType]::ParameterValue, 'Move the group''s committed offsets (dry run unless --execute)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'inboxctl;offsets;show' {
            [CompletionResult]::new('--brokers', '--brokers', [CompletionResultType]::ParameterName, 'Bootstrap brokers, host:port[,host:port…]')
            [CompletionResult]::new('-X', '-X ', [CompletionResultType]::ParameterName, 'A librdkafka property, repeatable: -X security.protocol=SASL_SSL -X sasl.mechanism=PLAIN')
            [CompletionResult]::new('--kafka-timeout', '--kafka-timeout', [CompletionResultType]::ParameterName, 'Give up on any one broker call after this long')
            [CompletionResult]::new('-g', '-g', [CompletionResultType]::ParameterName, 'The consumer group; without it, every group the brokers know, with its state and member count')
            [CompletionResult]::new('--group', '--group', [CompletionResultType]::ParameterName, 'The consumer group; without it, every group the brokers know, with its state and member count')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Only these topics (repeatable); default: every topic the group has offsets for')
            [CompletionResult]::new('--topic', '--topic', [CompletionResultType]::ParameterName, 'Only these topics (repeatable); default: every topic the group has offsets for')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: tables for people, JSON for scripts, CSV where rows are the point')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'inboxctl;offsets;reset' {
            [CompletionResult]::new('--brokers', '--brokers', [CompletionResultType]::ParameterName, 'Bootstrap brokers, host:port[,host:port…]')
            [CompletionResult]::new('-X', '-X ', [CompletionResultType]::ParameterName, 'A librdkafka property, repeatable: -X security.protocol=SASL_SSL -X sasl.mechanism=PLAIN')
            [CompletionResult]::new('--kafka-timeout', '--kafka-timeout', [CompletionResultType]::ParameterName, 'Give up on any one broker call after this long')
            [CompletionResult]::new('-g', '-g', [CompletionResultType]::ParameterName, 'The consumer group; it must have no active members')
            [CompletionResult]::new('--group', '--group', [CompletionResultType]::ParameterName, 'The consumer group; it must have no active members')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'TOPIC or TOPIC:P,P,… (repeatable); not needed with --from-file or --all-topics')
            [CompletionResult]::new('--topic', '--topic', [CompletionResultType]::ParameterName, 'TOPIC or TOPIC:P,P,… (repeatable); not needed with --from-file or --all-topics')
            [CompletionResult]::new('--to-offset', '--to-offset', [CompletionResultType]::ParameterName, 'To this offset in every partition named')
            [CompletionResult]::new('--to-datetime', '--to-datetime', [CompletionResultType]::ParameterName, 'To the first message at or after this time (RFC 3339, or YYYY-MM-DD[ HH:MM[:SS]] UTC)')
            [CompletionResult]::new('--by-duration', '--by-duration', [CompletionResultType]::ParameterName, 'To the first message at or after this long ago (e.g. 30m, 2h)')
            [CompletionResult]::new('--shift-by', '--shift-by', [CompletionResultType]::ParameterName, 'Move each committed offset by N (negative: back)')
            [CompletionResult]::new('--from-file', '--from-file', [CompletionResultType]::ParameterName, 'Apply a plan file: CSV with topic,partition,offset (as --export and undo files are)')
            [CompletionResult]::new('--consumer', '--consumer', [CompletionResultType]::ParameterName, 'The inbox consumer for --to-inbox (default: the group name)')
            [CompletionResult]::new('--database-url', '--database-url', [CompletionResultType]::ParameterName, 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)')
            [CompletionResult]::new('--connect-timeout', '--connect-timeout', [CompletionResultType]::ParameterName, 'Give up connecting after this long (e.g. 5s, 1m)')
            [CompletionResult]::new('--export', '--export', [CompletionResultType]::ParameterName, 'Write the computed plan to this CSV file instead of applying it (`-`: to standard output)')
            [CompletionResult]::new('--undo-file', '--undo-file', [CompletionResultType]::ParameterName, 'Where --execute writes the undo plan (default: inboxctl-undo-GROUP-TIME.csv here)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: tables for people, JSON for scripts, CSV where rows are the point')
            [CompletionResult]::new('--all-topics', '--all-topics', [CompletionResultType]::ParameterName, 'Every partition the group has a committed offset for, in every topic')
            [CompletionResult]::new('--to-earliest', '--to-earliest', [CompletionResultType]::ParameterName, 'To each partition''s log start')
            [CompletionResult]::new('--to-latest', '--to-latest', [CompletionResultType]::ParameterName, 'To each partition''s log end (skip everything not yet read)')
            [CompletionResult]::new('--to-inbox', '--to-inbox', [CompletionResultType]::ParameterName, 'To the inbox''s position: highest processed offset + 1 per partition')
            [CompletionResult]::new('--execute', '--execute', [CompletionResultType]::ParameterName, 'Apply the new offsets (without it, only show them)')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Only show the new offsets, as without --execute (for kafka-consumer-groups.sh habits)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'inboxctl;offsets;help' {
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Committed offset, log start, log end and lag per partition, and the group''s state; without --group, the groups there are')
            [CompletionResult]::new('reset', 'reset', [CompletionResultType]::ParameterValue, 'Move the group''s committed offsets (dry run unless --execute)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'inboxctl;offsets;help;show' {
            break
        }
        'inboxctl;offsets;help;reset' {
            break
        }
        'inboxctl;offsets;help;help' {
            break
        }
        'inboxctl;compare' {
            [CompletionResult]::new('--brokers', '--brokers', [CompletionResultType]::ParameterName, 'Bootstrap brokers, host:port[,host:port…]')
            [CompletionResult]::new('-X', '-X ', [CompletionResultType]::ParameterName, 'A librdkafka property, repeatable: -X security.protocol=SASL_SSL -X sasl.mechanism=PLAIN')
            [CompletionResult]::new('--kafka-timeout', '--kafka-timeout', [CompletionResultType]::ParameterName, 'Give up on any one broker call after this long')
            [CompletionResult]::new('--database-url', '--database-url', [CompletionResultType]::ParameterName, 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)')
            [CompletionResult]::new('--connect-timeout', '--connect-timeout', [CompletionResultType]::ParameterName, 'Give up connecting after this long (e.g. 5s, 1m)')
            [CompletionResult]::new('-g', '-g', [CompletionResultType]::ParameterName, 'The consumer group whose committed offsets are compared')
            [CompletionResult]::new('--group', '--group', [CompletionResultType]::ParameterName, 'The consumer group whose committed offsets are compared')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Only these topics (repeatable); default: every topic the group has offsets for')
            [CompletionResult]::new('--topic', '--topic', [CompletionResultType]::ParameterName, 'Only these topics (repeatable); default: every topic the group has offsets for')
            [CompletionResult]::new('--consumer', '--consumer', [CompletionResultType]::ParameterName, 'The inbox consumer (default: the group name)')
            [CompletionResult]::new('--event-id-from', '--event-id-from', [CompletionResultType]::ParameterName, 'Where a message''s event id is: header:NAME, json:/pointer, key, coordinates (default: header event_id, then JSON field event_id)')
            [CompletionResult]::new('--pruned-before', '--pruned-before', [CompletionResultType]::ParameterName, 'Rows processed before WHEN may be gone, deleted by a prune inboxctl did not record (an application''s own DELETE): a timestamp or -DURATION (ago). Offsets are then checked as after a recorded prune; the later of the two cutoffs counts')
            [CompletionResult]::new('--show', '--show', [CompletionResultType]::ParameterName, 'Show at most this many offsets or events per finding in tables (JSON lists all, but without --scan at most 10,000 lost per partition)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: tables for people, JSON for scripts, CSV where rows are the point')
            [CompletionResult]::new('--scan', '--scan', [CompletionResultType]::ParameterName, 'Read the topic from log start to log end: name each lost event, find duplicates, and match by event id (works on tables without coordinates)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'inboxctl;replay' {
            [CompletionResult]::new('--brokers', '--brokers', [CompletionResultType]::ParameterName, 'Bootstrap brokers, host:port[,host:port…]')
            [CompletionResult]::new('-X', '-X ', [CompletionResultType]::ParameterName, 'A librdkafka property, repeatable: -X security.protocol=SASL_SSL -X sasl.mechanism=PLAIN')
            [CompletionResult]::new('--kafka-timeout', '--kafka-timeout', [CompletionResultType]::ParameterName, 'Give up on any one broker call after this long')
            [CompletionResult]::new('--database-url', '--database-url', [CompletionResultType]::ParameterName, 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)')
            [CompletionResult]::new('--connect-timeout', '--connect-timeout', [CompletionResultType]::ParameterName, 'Give up connecting after this long (e.g. 5s, 1m)')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'The topic to replay')
            [CompletionResult]::new('--topic', '--topic', [CompletionResultType]::ParameterName, 'The topic to replay')
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Only these partitions (repeatable); default: all')
            [CompletionResult]::new('--partition', '--partition', [CompletionResultType]::ParameterName, 'Only these partitions (repeatable); default: all')
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'Where to start: earliest, OFFSET, P:OFFSET,…, a timestamp, -DURATION (ago), committed:GROUP')
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'Where to stop, exclusive: latest, OFFSET, a timestamp; fixed when the command starts')
            [CompletionResult]::new('--consumer', '--consumer', [CompletionResultType]::ParameterName, 'The inbox consumer the events are recorded under')
            [CompletionResult]::new('--event-id-from', '--event-id-from', [CompletionResultType]::ParameterName, 'Where a message''s event id is: header:NAME, json:/pointer, key, coordinates (default: header event_id, then JSON field event_id)')
            [CompletionResult]::new('--sql', '--sql', [CompletionResultType]::ParameterName, 'SQL handler: a file of statements with :placeholders, run in the inbox''s transaction')
            [CompletionResult]::new('--exec', '--exec', [CompletionResultType]::ParameterName, 'Exec handler: a command started once, fed one JSON line per message, answering {"ok":true} or {"ok":false,"error":"…"} per line')
            [CompletionResult]::new('--handler-timeout', '--handler-timeout', [CompletionResultType]::ParameterName, 'Exec handler: how long it may take over one message (e.g. 30s). One that takes longer is stopped, with its process group, and the run ends (exit 1) after recording what it answered ok for; with --on-error skip, the message fails and a new handler goes on [default: no limit]')
            [CompletionResult]::new('--param', '--param', [CompletionResultType]::ParameterName, 'Bind a placeholder to a nested JSON field: NAME=json:/a/b (repeatable)')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Messages per transaction')
            [CompletionResult]::new('--on-missing-id', '--on-missing-id', [CompletionResultType]::ParameterName, 'A message without an event id: fail (stop) or skip it')
            [CompletionResult]::new('--on-error', '--on-error', [CompletionResultType]::ParameterName, 'A message the handler fails on: stop, or skip it (and go on)')
            [CompletionResult]::new('--dead-letter', '--dead-letter', [CompletionResultType]::ParameterName, 'Append failed and skipped messages here as JSON lines, with the error')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: tables for people, JSON for scripts, CSV where rows are the point')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Say what would run and what would be skipped; write nothing')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'inboxctl;completions' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: tables for people, JSON for scripts, CSV where rows are the point')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only errors and warnings on stderr (no progress bars, no notes)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'inboxctl;help' {
            [CompletionResult]::new('migrate', 'migrate', [CompletionResultType]::ParameterValue, 'Create, upgrade or downgrade the processed_messages table')
            [CompletionResult]::new('inspect', 'inspect', [CompletionResultType]::ParameterValue, 'Show what the inbox holds: rows per consumer, ages, offset ranges; or look up one event')
            [CompletionResult]::new('prune', 'prune', [CompletionResultType]::ParameterValue, 'Delete rows older than a retention, in small batches')
            [CompletionResult]::new('offsets', 'offsets', [CompletionResultType]::ParameterValue, 'Show or reset a consumer group''s committed offsets')
            [CompletionResult]::new('compare', 'compare', [CompletionResultType]::ParameterValue, 'Compare a group''s committed offsets with the inbox: lost, pending redelivery, orphans')
            [CompletionResult]::new('replay', 'replay', [CompletionResultType]::ParameterValue, 'Re-drive a range of a topic through an idempotent handler, each event exactly once')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'inboxctl;help;migrate' {
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Apply every pending migration (creates the database file for SQLite)')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'List the migrations and whether each is applied')
            [CompletionResult]::new('revert', 'revert', [CompletionResultType]::ParameterValue, 'Undo the last migration, or every migration above --to')
            break
        }
        'inboxctl;help;migrate;run' {
            break
        }
        'inboxctl;help;migrate;status' {
            break
        }
        'inboxctl;help;migrate;revert' {
            break
        }
        'inboxctl;help;inspect' {
            break
        }
        'inboxctl;help;prune' {
            break
        }
        'inboxctl;help;offsets' {
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Committed offset, log start, log end and lag per partition, and the group''s state; without --group, the groups there are')
            [CompletionResult]::new('reset', 'reset', [CompletionResultType]::ParameterValue, 'Move the group''s committed offsets (dry run unless --execute)')
            break
        }
        'inboxctl;help;offsets;show' {
            break
        }
        'inboxctl;help;offsets;reset' {
            break
        }
        'inboxctl;help;compare' {
            break
        }
        'inboxctl;help;replay' {
            break
        }
        'inboxctl;help;completions' {
            break
        }
        'inboxctl;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
