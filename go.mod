module spate

go 1.26.8

require (
	github.com/google/uuid v1.6.0
	github.com/hashicorp/yamux v0.1.2
	github.com/klauspost/compress v1.20.4
)

require github.com/goccy/go-yaml v1.19.2
