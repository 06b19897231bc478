
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
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print nothing on stderr but errors (no progress bars, no notes)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print nothing on stderr but errors (no progress bars, no notes)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('migrate', 'migrate', [CompletionResultType]::ParameterValue, 'Create, upgrade or downgrade the processed_messages table')
            [CompletionResult]::new('inspect', 'inspect', [CompletionResultType]::ParameterValue, 'Show what the inbox holds: rows per consumer, ages, offset ranges; or look up one event')
            [CompletionResult]::new('prune', 'prune', [CompletionResultType]::ParameterValue, 'Delete rows older than a retention, in small batches')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'inboxctl;migrate' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: tables for people, JSON for scripts, CSV where rows are the point')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print nothing on stderr but errors (no progress bars, no notes)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print nothing on stderr but errors (no progress bars, no notes)')
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
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: tables for people, JSON for scripts, CSV where rows are the point')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Print the SQL that would run and change nothing')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print nothing on stderr but errors (no progress bars, no notes)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print nothing on stderr but errors (no progress bars, no notes)')
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
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print nothing on stderr but errors (no progress bars, no notes)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print nothing on stderr but errors (no progress bars, no notes)')
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
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: tables for people, JSON for scripts, CSV where rows are the point')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Print the SQL that would run and change nothing')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask before dropping a table that holds rows')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask before dropping a table that holds rows')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print nothing on stderr but errors (no progress bars, no notes)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print nothing on stderr but errors (no progress bars, no notes)')
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
            [CompletionResult]::new('--estimate', '--estimate', [CompletionResultType]::ParameterName, 'Take the total row count from the planner''s statistics (PostgreSQL, MySQL) instead of counting')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print nothing on stderr but errors (no progress bars, no notes)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print nothing on stderr but errors (no progress bars, no notes)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'inboxctl;prune' {
            [CompletionResult]::new('--database-url', '--database-url', [CompletionResultType]::ParameterName, 'Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)')
            [CompletionResult]::new('--connect-timeout', '--connect-timeout', [CompletionResultType]::ParameterName, 'Give up connecting after this long (e.g. 5s, 1m)')
            [CompletionResult]::new('--older-than', '--older-than', [CompletionResultType]::ParameterName, 'Delete rows processed longer ago than this (e.g. 7d, 36h, 2w)')
            [CompletionResult]::new('--before', '--before', [CompletionResultType]::ParameterName, 'Delete rows processed before this time (RFC 3339, or YYYY-MM-DD[ HH:MM:SS] in UTC)')
            [CompletionResult]::new('--consumer', '--consumer', [CompletionResultType]::ParameterName, 'Only this consumer''s rows')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Rows deleted per transaction')
            [CompletionResult]::new('--max-rows', '--max-rows', [CompletionResultType]::ParameterName, 'Stop after deleting this many rows in all')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: tables for people, JSON for scripts, CSV where rows are the point')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Count what would be deleted and delete nothing')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when not on a terminal, e.g. from cron)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when not on a terminal, e.g. from cron)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print nothing on stderr but errors (no progress bars, no notes)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print nothing on stderr but errors (no progress bars, no notes)')
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
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print nothing on stderr but errors (no progress bars, no notes)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print nothing on stderr but errors (no progress bars, no notes)')
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
