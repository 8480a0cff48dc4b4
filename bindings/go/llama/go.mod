module minfer/bindings/go/llama

go 1.19
