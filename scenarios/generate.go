package scenarios

//go:generate go run ./internal/gendoc ../docs/guarantees.md
//go:generate go run github.com/vektra/mockery/v2@v2.53.7 --config ../.mockery.yaml
