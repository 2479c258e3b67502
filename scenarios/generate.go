package scenarios

//go:generate go run ./internal/gendoc ../docs/guarantees.md
