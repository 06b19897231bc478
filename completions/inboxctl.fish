# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_inboxctl_global_optspecs
    string join \n format= v/verbose q/quiet h/help V/version
end

function __fish_inboxctl_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_inboxctl_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_inboxctl_using_subcommand
    set -l cmd (__fish_inboxctl_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c inboxctl -n "__fish_inboxctl_needs_command" -l format -d 'Output format: tables for people, JSON for scripts, CSV where rows are the point' -r -f -a "table\t''
json\t''
csv\t''"
complete -c inboxctl -n "__fish_inboxctl_needs_command" -s v -l verbose -d 'Print more detail on stderr (repeat for more)'
complete -c inboxctl -n "__fish_inboxctl_needs_command" -s q -l quiet -d 'Only errors and warnings on stderr (no progress bars, no notes)'
complete -c inboxctl -n "__fish_inboxctl_needs_command" -s h -l help -d 'Print help'
complete -c inboxctl -n "__fish_inboxctl_needs_command" -s V -l version -d 'Print version'
complete -c inboxctl -n "__fish_inboxctl_needs_command" -f -a "migrate" -d 'Create, upgrade or downgrade the processed_messages table'
complete -c inboxctl -n "__fish_inboxctl_needs_command" -f -a "inspect" -d 'Show what the inbox holds: rows per consumer, ages, offset ranges; or look up one event'
complete -c inboxctl -n "__fish_inboxctl_needs_command" -f -a "prune" -d 'Delete rows older than a retention, in small batches'
complete -c inboxctl -n "__fish_inboxctl_needs_command" -f -a "offsets" -d 'Show or reset a consumer group\'s committed offsets'
complete -c inboxctl -n "__fish_inboxctl_needs_command" -f -a "compare" -d 'Compare a group\'s committed offsets with the inbox: lost, pending redelivery, orphans'
complete -c inboxctl -n "__fish_inboxctl_needs_command" -f -a "replay" -d 'Re-drive a range of a topic through an idempotent handler, each event exactly once'
complete -c inboxctl -n "__fish_inboxctl_needs_command" -f -a "completions" -d 'Print a shell completion script'
complete -c inboxctl -n "__fish_inboxctl_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and not __fish_seen_subcommand_from run status revert help" -l format -d 'Output format: tables for people, JSON for scripts, CSV where rows are the point' -r -f -a "table\t''
json\t''
csv\t''"
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and not __fish_seen_subcommand_from run status revert help" -s v -l verbose -d 'Print more detail on stderr (repeat for more)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and not __fish_seen_subcommand_from run status revert help" -s q -l quiet -d 'Only errors and warnings on stderr (no progress bars, no notes)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and not __fish_seen_subcommand_from run status revert help" -s h -l help -d 'Print help'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and not __fish_seen_subcommand_from run status revert help" -s V -l version -d 'Print version'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and not __fish_seen_subcommand_from run status revert help" -f -a "run" -d 'Apply every pending migration (creates the database file for SQLite)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and not __fish_seen_subcommand_from run status revert help" -f -a "status" -d 'List the migrations and whether each is applied'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and not __fish_seen_subcommand_from run status revert help" -f -a "revert" -d 'Undo the last migration, or every migration above --to'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and not __fish_seen_subcommand_from run status revert help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from run" -l database-url -d 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from run" -l connect-timeout -d 'Give up connecting after this long (e.g. 5s, 1m)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from run" -l lock-timeout -d 'How long a migration may wait for a lock on the inbox\'s tables (PostgreSQL, MySQL), which the application\'s open transactions hold, before it gives up; the application\'s statements queue behind it meanwhile. 0 waits without limit [default: the session\'s own limit where it has one, 5s otherwise]' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from run" -l format -d 'Output format: tables for people, JSON for scripts, CSV where rows are the point' -r -f -a "table\t''
json\t''
csv\t''"
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from run" -l dry-run -d 'Print the SQL that would run and change nothing'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from run" -s v -l verbose -d 'Print more detail on stderr (repeat for more)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from run" -s q -l quiet -d 'Only errors and warnings on stderr (no progress bars, no notes)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from run" -s h -l help -d 'Print help'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from run" -s V -l version -d 'Print version'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from status" -l database-url -d 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from status" -l connect-timeout -d 'Give up connecting after this long (e.g. 5s, 1m)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from status" -l format -d 'Output format: tables for people, JSON for scripts, CSV where rows are the point' -r -f -a "table\t''
json\t''
csv\t''"
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from status" -s v -l verbose -d 'Print more detail on stderr (repeat for more)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from status" -s q -l quiet -d 'Only errors and warnings on stderr (no progress bars, no notes)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from status" -s h -l help -d 'Print help'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from status" -s V -l version -d 'Print version'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from revert" -l database-url -d 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from revert" -l connect-timeout -d 'Give up connecting after this long (e.g. 5s, 1m)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from revert" -l to -d 'Revert down to this version (0 reverts everything and drops the table)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from revert" -l lock-timeout -d 'How long a migration may wait for a lock on the inbox\'s tables (PostgreSQL, MySQL), which the application\'s open transactions hold, before it gives up; the application\'s statements queue behind it meanwhile. 0 waits without limit [default: the session\'s own limit where it has one, 5s otherwise]' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from revert" -l format -d 'Output format: tables for people, JSON for scripts, CSV where rows are the point' -r -f -a "table\t''
json\t''
csv\t''"
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from revert" -l dry-run -d 'Print the SQL that would run and change nothing'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from revert" -s y -l yes -d 'Do not ask before dropping a table that holds rows, or (reverting migration 2) the topic, partition and offset rows hold'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from revert" -s v -l verbose -d 'Print more detail on stderr (repeat for more)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from revert" -s q -l quiet -d 'Only errors and warnings on stderr (no progress bars, no notes)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from revert" -s h -l help -d 'Print help'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from revert" -s V -l version -d 'Print version'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from help" -f -a "run" -d 'Apply every pending migration (creates the database file for SQLite)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from help" -f -a "status" -d 'List the migrations and whether each is applied'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from help" -f -a "revert" -d 'Undo the last migration, or every migration above --to'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand migrate; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand inspect" -l database-url -d 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand inspect" -l connect-timeout -d 'Give up connecting after this long (e.g. 5s, 1m)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand inspect" -l consumer -d 'Only this consumer' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand inspect" -l event-id -d 'Look up one event id: did we process it, when, from where?' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand inspect" -l format -d 'Output format: tables for people, JSON for scripts, CSV where rows are the point' -r -f -a "table\t''
json\t''
csv\t''"
complete -c inboxctl -n "__fish_inboxctl_using_subcommand inspect" -l estimate -d 'Row counts from the planner\'s statistics (PostgreSQL, MySQL), without reading the rows: fast on large tables of few consumers (it asks twice per consumer), no ages or partitions'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand inspect" -s v -l verbose -d 'Print more detail on stderr (repeat for more)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand inspect" -s q -l quiet -d 'Only errors and warnings on stderr (no progress bars, no notes)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand inspect" -s h -l help -d 'Print help'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand inspect" -s V -l version -d 'Print version'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand prune" -l database-url -d 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand prune" -l connect-timeout -d 'Give up connecting after this long (e.g. 5s, 1m)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand prune" -l older-than -d 'Delete rows processed longer ago than this (e.g. 7d, 36h, 2w; 1m is a minute, 1M a month)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand prune" -l before -d 'Delete rows processed before this time (RFC 3339, or YYYY-MM-DD[ HH:MM[:SS]] in UTC)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand prune" -l consumer -d 'Only this consumer\'s rows' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand prune" -l batch-size -d 'Rows deleted per transaction, at most 10000000 [default: 20000 on PostgreSQL, 5000 on SQLite and MySQL]' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand prune" -l max-rows -d 'Stop after deleting this many rows in all' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand prune" -l pause -d 'Wait this long after each batch (e.g. 2ms), leaving the database to the application\'s own writes: a slower prune for steadier latency [default: 0s; on SQLite, as long as the batch took]' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand prune" -l strategy -d 'How batches find their rows: `index` takes the oldest first through the (consumer, processed_at) index; `blocks` (PostgreSQL) reads the table\'s pages in physical order, one page range per batch, as one DELETE would; `auto` takes blocks on PostgreSQL when at least a tenth of the table goes and no --max-rows is given, index otherwise' -r -f -a "auto\t''
index\t''
blocks\t''"
complete -c inboxctl -n "__fish_inboxctl_using_subcommand prune" -l group -d 'Keep every row this consumer group could still have redelivered (offset >= its committed offset for that partition); prunes only consumer GROUP unless --consumer names the group\'s inbox consumer; needs the brokers' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand prune" -l brokers -d 'Bootstrap brokers, host:port[,host:port…]' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand prune" -s X -d 'A librdkafka property, repeatable: -X security.protocol=SASL_SSL -X sasl.mechanism=PLAIN' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand prune" -l kafka-timeout -d 'Give up on any one broker call after this long' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand prune" -l format -d 'Output format: tables for people, JSON for scripts, CSV where rows are the point' -r -f -a "table\t''
json\t''
csv\t''"
complete -c inboxctl -n "__fish_inboxctl_using_subcommand prune" -l dry-run -d 'Count what would be deleted and delete nothing'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand prune" -s y -l yes -d 'Do not ask for confirmation (required when not on a terminal, e.g. from cron); the rows are then deleted without being counted first'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand prune" -s v -l verbose -d 'Print more detail on stderr (repeat for more)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand prune" -s q -l quiet -d 'Only errors and warnings on stderr (no progress bars, no notes)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand prune" -s h -l help -d 'Print help'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand prune" -s V -l version -d 'Print version'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and not __fish_seen_subcommand_from show reset help" -l format -d 'Output format: tables for people, JSON for scripts, CSV where rows are the point' -r -f -a "table\t''
json\t''
csv\t''"
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and not __fish_seen_subcommand_from show reset help" -s v -l verbose -d 'Print more detail on stderr (repeat for more)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and not __fish_seen_subcommand_from show reset help" -s q -l quiet -d 'Only errors and warnings on stderr (no progress bars, no notes)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and not __fish_seen_subcommand_from show reset help" -s h -l help -d 'Print help'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and not __fish_seen_subcommand_from show reset help" -s V -l version -d 'Print version'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and not __fish_seen_subcommand_from show reset help" -f -a "show" -d 'Committed offset, log start, log end and lag per partition, and the group\'s state; without --group, the groups there are'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and not __fish_seen_subcommand_from show reset help" -f -a "reset" -d 'Move the group\'s committed offsets (dry run unless --execute)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and not __fish_seen_subcommand_from show reset help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from show" -l brokers -d 'Bootstrap brokers, host:port[,host:port…]' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from show" -s X -d 'A librdkafka property, repeatable: -X security.protocol=SASL_SSL -X sasl.mechanism=PLAIN' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from show" -l kafka-timeout -d 'Give up on any one broker call after this long' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from show" -s g -l group -d 'The consumer group; without it, every group the brokers know, with its state and member count' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from show" -s t -l topic -d 'Only these topics (repeatable); default: every topic the group has offsets for' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from show" -l format -d 'Output format: tables for people, JSON for scripts, CSV where rows are the point' -r -f -a "table\t''
json\t''
csv\t''"
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from show" -s v -l verbose -d 'Print more detail on stderr (repeat for more)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from show" -s q -l quiet -d 'Only errors and warnings on stderr (no progress bars, no notes)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from show" -s V -l version -d 'Print version'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -l brokers -d 'Bootstrap brokers, host:port[,host:port…]' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -s X -d 'A librdkafka property, repeatable: -X security.protocol=SASL_SSL -X sasl.mechanism=PLAIN' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -l kafka-timeout -d 'Give up on any one broker call after this long' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -s g -l group -d 'The consumer group; it must have no active members' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -s t -l topic -d 'TOPIC or TOPIC:P,P,… (repeatable); not needed with --from-file or --all-topics' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -l to-offset -d 'To this offset in every partition named' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -l to-datetime -d 'To the first message at or after this time (RFC 3339, or YYYY-MM-DD[ HH:MM[:SS]] UTC)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -l by-duration -d 'To the first message at or after this long ago (e.g. 30m, 2h)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -l shift-by -d 'Move each committed offset by N (negative: back)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -l from-file -d 'Apply a plan file: CSV with topic,partition,offset (as --export and undo files are)' -r -F
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -l consumer -d 'The inbox consumer for --to-inbox (default: the group name)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -l database-url -d 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -l connect-timeout -d 'Give up connecting after this long (e.g. 5s, 1m)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -l export -d 'Write the computed plan to this CSV file instead of applying it (`-`: to standard output)' -r -F
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -l undo-file -d 'Where --execute writes the undo plan (default: inboxctl-undo-GROUP-TIME.csv here)' -r -F
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -l format -d 'Output format: tables for people, JSON for scripts, CSV where rows are the point' -r -f -a "table\t''
json\t''
csv\t''"
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -l all-topics -d 'Every partition the group has a committed offset for, in every topic'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -l to-earliest -d 'To each partition\'s log start'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -l to-latest -d 'To each partition\'s log end (skip everything not yet read)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -l to-inbox -d 'To the inbox\'s position: highest processed offset + 1 per partition'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -l execute -d 'Apply the new offsets (without it, only show them)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -l dry-run -d 'Only show the new offsets, as without --execute (for kafka-consumer-groups.sh habits)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -s v -l verbose -d 'Print more detail on stderr (repeat for more)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -s q -l quiet -d 'Only errors and warnings on stderr (no progress bars, no notes)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -s h -l help -d 'Print help'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from reset" -s V -l version -d 'Print version'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from help" -f -a "show" -d 'Committed offset, log start, log end and lag per partition, and the group\'s state; without --group, the groups there are'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from help" -f -a "reset" -d 'Move the group\'s committed offsets (dry run unless --execute)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand offsets; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand compare" -l brokers -d 'Bootstrap brokers, host:port[,host:port…]' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand compare" -s X -d 'A librdkafka property, repeatable: -X security.protocol=SASL_SSL -X sasl.mechanism=PLAIN' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand compare" -l kafka-timeout -d 'Give up on any one broker call after this long' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand compare" -l database-url -d 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand compare" -l connect-timeout -d 'Give up connecting after this long (e.g. 5s, 1m)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand compare" -s g -l group -d 'The consumer group whose committed offsets are compared' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand compare" -s t -l topic -d 'Only these topics (repeatable); default: every topic the group has offsets for' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand compare" -l consumer -d 'The inbox consumer (default: the group name)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand compare" -l event-id-from -d 'Where a message\'s event id is: header:NAME, json:/pointer, key, coordinates (default: header event_id, then JSON field event_id)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand compare" -l pruned-before -d 'Rows processed before WHEN may be gone, deleted by a prune inboxctl did not record (an application\'s own DELETE): a timestamp or -DURATION (ago). Offsets are then checked as after a recorded prune; the later of the two cutoffs counts' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand compare" -l show -d 'Show at most this many offsets or events per finding in tables (JSON lists all, but without --scan at most 10,000 lost per partition)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand compare" -l format -d 'Output format: tables for people, JSON for scripts, CSV where rows are the point' -r -f -a "table\t''
json\t''
csv\t''"
complete -c inboxctl -n "__fish_inboxctl_using_subcommand compare" -l scan -d 'Read the topic from log start to log end: name each lost event, find duplicates, and match by event id (works on tables without coordinates)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand compare" -s v -l verbose -d 'Print more detail on stderr (repeat for more)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand compare" -s q -l quiet -d 'Only errors and warnings on stderr (no progress bars, no notes)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand compare" -s h -l help -d 'Print help'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand compare" -s V -l version -d 'Print version'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -l brokers -d 'Bootstrap brokers, host:port[,host:port…]' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -s X -d 'A librdkafka property, repeatable: -X security.protocol=SASL_SSL -X sasl.mechanism=PLAIN' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -l kafka-timeout -d 'Give up on any one broker call after this long' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -l database-url -d 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -l connect-timeout -d 'Give up connecting after this long (e.g. 5s, 1m)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -s t -l topic -d 'The topic to replay' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -s p -l partition -d 'Only these partitions (repeatable); default: all' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -l from -d 'Where to start: earliest, OFFSET, P:OFFSET,…, a timestamp, -DURATION (ago), committed:GROUP' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -l to -d 'Where to stop, exclusive: latest, OFFSET, a timestamp; fixed when the command starts' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -l consumer -d 'The inbox consumer the events are recorded under' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -l event-id-from -d 'Where a message\'s event id is: header:NAME, json:/pointer, key, coordinates (default: header event_id, then JSON field event_id)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -l sql -d 'SQL handler: a file of statements with :placeholders, run in the inbox\'s transaction' -r -F
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -l exec -d 'Exec handler: a command started once, fed one JSON line per message, answering {"ok":true} or {"ok":false,"error":"…"} per line' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -l handler-timeout -d 'Exec handler: how long it may take over one message (e.g. 30s). One that takes longer is stopped, with its process group, and the run ends (exit 1) after recording what it answered ok for; with --on-error skip, the message fails and a new handler goes on [default: no limit]' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -l param -d 'Bind a placeholder to a nested JSON field: NAME=json:/a/b (repeatable)' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -l batch-size -d 'Messages per transaction' -r
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -l on-missing-id -d 'A message without an event id: fail (stop) or skip it' -r -f -a "fail\t''
skip\t''"
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -l on-error -d 'A message the handler fails on: stop, or skip it (and go on)' -r -f -a "stop\t''
skip\t''"
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -l dead-letter -d 'Append failed and skipped messages here as JSON lines, with the error' -r -F
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -l format -d 'Output format: tables for people, JSON for scripts, CSV where rows are the point' -r -f -a "table\t''
json\t''
csv\t''"
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -l dry-run -d 'Say what would run and what would be skipped; write nothing'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -s v -l verbose -d 'Print more detail on stderr (repeat for more)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -s q -l quiet -d 'Only errors and warnings on stderr (no progress bars, no notes)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -s h -l help -d 'Print help'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand replay" -s V -l version -d 'Print version'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand completions" -l format -d 'Output format: tables for people, JSON for scripts, CSV where rows are the point' -r -f -a "table\t''
json\t''
csv\t''"
complete -c inboxctl -n "__fish_inboxctl_using_subcommand completions" -s v -l verbose -d 'Print more detail on stderr (repeat for more)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand completions" -s q -l quiet -d 'Only errors and warnings on stderr (no progress bars, no notes)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand completions" -s h -l help -d 'Print help'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand completions" -s V -l version -d 'Print version'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand help; and not __fish_seen_subcommand_from migrate inspect prune offsets compare replay completions help" -f -a "migrate" -d 'Create, upgrade or downgrade the processed_messages table'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand help; and not __fish_seen_subcommand_from migrate inspect prune offsets compare replay completions help" -f -a "inspect" -d 'Show what the inbox holds: rows per consumer, ages, offset ranges; or look up one event'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand help; and not __fish_seen_subcommand_from migrate inspect prune offsets compare replay completions help" -f -a "prune" -d 'Delete rows older than a retention, in small batches'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand help; and not __fish_seen_subcommand_from migrate inspect prune offsets compare replay completions help" -f -a "offsets" -d 'Show or reset a consumer group\'s committed offsets'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand help; and not __fish_seen_subcommand_from migrate inspect prune offsets compare replay completions help" -f -a "compare" -d 'Compare a group\'s committed offsets with the inbox: lost, pending redelivery, orphans'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand help; and not __fish_seen_subcommand_from migrate inspect prune offsets compare replay completions help" -f -a "replay" -d 'Re-drive a range of a topic through an idempotent handler, each event exactly once'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand help; and not __fish_seen_subcommand_from migrate inspect prune offsets compare replay completions help" -f -a "completions" -d 'Print a shell completion script'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand help; and not __fish_seen_subcommand_from migrate inspect prune offsets compare replay completions help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand help; and __fish_seen_subcommand_from migrate" -f -a "run" -d 'Apply every pending migration (creates the database file for SQLite)'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand help; and __fish_seen_subcommand_from migrate" -f -a "status" -d 'List the migrations and whether each is applied'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand help; and __fish_seen_subcommand_from migrate" -f -a "revert" -d 'Undo the last migration, or every migration above --to'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand help; and __fish_seen_subcommand_from offsets" -f -a "show" -d 'Committed offset, log start, log end and lag per partition, and the group\'s state; without --group, the groups there are'
complete -c inboxctl -n "__fish_inboxctl_using_subcommand help; and __fish_seen_subcommand_from offsets" -f -a "reset" -d 'Move the group\'s committed offsets (dry run unless --execute)'
