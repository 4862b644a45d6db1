STRIPE_KEY={{ wsctl://stripe-live/apiKey }}
