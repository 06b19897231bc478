fn main() -> std::process::ExitCode {
    inboxctl::main()
}
