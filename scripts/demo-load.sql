-- The demo's write load against Sakila (scripts/demo.sh): every kind of change sluice must carry.
-- Inserts
INSERT INTO actor (first_name, last_name) VALUES ('ADA', 'LOVELACE'), ('GRACE', 'HOPPER'), ('ÉMILIE', 'DU CHÂTELET');
INSERT INTO category (name) VALUES ('Documentaire — ÉTÉ');
-- Updates
UPDATE film SET rental_rate = rental_rate + 1.00, special_features = 'Trailers,Commentaries' WHERE film_id <= 50;
UPDATE customer SET active = 0, email = CONCAT('x.', email) WHERE customer_id % 7 = 0;
-- Deletes (payment rows have no dependants)
DELETE FROM payment WHERE payment_id % 50 = 0;
-- A primary-key change
UPDATE actor SET actor_id = 10000 WHERE first_name = 'ADA' AND last_name = 'LOVELACE';
-- A multi-statement transaction
START TRANSACTION;
INSERT INTO language (name) VALUES ('Latin');
UPDATE film SET language_id = LAST_INSERT_ID() WHERE film_id BETWEEN 100 AND 110;
DELETE FROM film_actor WHERE film_id = 100;
COMMIT;
-- A rolled-back transaction: none of it may reach the replica
START TRANSACTION;
DELETE FROM rental WHERE rental_id < 1000;
UPDATE actor SET last_name = 'ROLLED BACK';
ROLLBACK;
