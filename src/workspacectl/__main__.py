from workspacectl.cli.main import main

main()
