package scenarios

import "github.com/hookcert/hookcert/vocab"

// vocabulary is the run's vocabulary: the declared one, else the built-in domain.
func (e *Env) vocabulary() *vocab.Vocabulary {
	if e.Vocab != nil {
		return e.Vocab
	}
	return builtin
}

var builtin = vocab.BuiltinVocabulary()

func prefixOr(p string) string {
	if p == "" {
		return "obj"
	}
	return p
}
